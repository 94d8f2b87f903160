"""Typed messages from worker threads to the screen (posting a message is thread-safe)."""

from __future__ import annotations

from textual.message import Message

from assistant.agent.agent import Agent


class ModelProgress(Message):
    """Weights are being assembled or verified."""

    def __init__(self, label: str, done: int, total: int) -> None:
        super().__init__()
        self.label = label
        self.done = done
        self.total = total


class ServerStatusChanged(Message):
    """The local LLM server is starting, ready, restarting, stopped or failed."""

    def __init__(self, state: str, text: str) -> None:
        super().__init__()
        self.state = state
        self.text = text


class ChatReady(Message):
    """The agent is ready; ``warning`` says why the warm-up request failed, if it did."""

    def __init__(self, agent: Agent, warning: str | None = None) -> None:
        super().__init__()
        self.agent = agent
        self.warning = warning


class StartupFailed(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class ReplyChunk(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class ReplyFinished(Message):
    def __init__(self, text: str, interrupted: bool = False) -> None:
        super().__init__()
        self.text = text
        self.interrupted = interrupted


class ReplyFailed(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
