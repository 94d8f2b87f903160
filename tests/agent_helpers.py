"""Collaborators for agent tests: scripted streaming LLMs (JSON action and native tool
calling), action builders, and an agent that reads drafts with a small retrieval."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from assistant.agent.agent import Agent
from assistant.agent.context import ContextConfig, ContextWindow
from assistant.agent.instructions import instructions
from assistant.agent.tools import Stores
from assistant.agent.turn import AgentConfig
from assistant.llm.messages import StreamDelta, TextDelta, ToolCallDelta

Messages = Sequence[dict[str, str]]
StreamReply = str | Exception | Callable[[Messages], str]
# Native replies: a str is plain content; a list of deltas (see ``call``) is streamed as given.
Deltas = Sequence[StreamDelta]
NativeReply = str | Deltas | Exception | Callable[[Messages], str | Deltas]


def action(tool: str, heartbeat: bool = False, **arguments: Any) -> str:
    return json.dumps({"tool": tool, "arguments": arguments, "request_heartbeat": heartbeat})


def say(message: str, heartbeat: bool = False) -> str:
    """A message as the model writes it: the short form, or (``heartbeat``, which the schema
    no longer allows) the send_message action written out."""
    if heartbeat:
        return action("send_message", heartbeat, message=message)
    return json.dumps({"message": message})


def call(
    tool: str, heartbeat: bool = False, *, index: int = 0, raw: str | None = None, **arguments: Any
) -> list[StreamDelta]:
    """A native tool call (its arguments' JSON carries request_heartbeat); ``raw`` replaces
    the arguments' JSON, to break it."""
    text = raw if raw is not None else json.dumps({**arguments, "request_heartbeat": heartbeat})
    return [ToolCallDelta(index, f"call_{index}", tool), ToolCallDelta(index, arguments=text)]


class ScriptedStream:
    """Streams each scripted reply in small chunks (the last one repeats); ``complete`` (the
    summaries) answers ``summary``."""

    def __init__(self, *replies: StreamReply, chunk: int = 7, summary: str = "A summary.") -> None:
        self.replies = list(replies)
        self.chunk = chunk
        self.summary = summary
        self.calls: list[list[dict[str, str]]] = []
        # The JSON schema each call was held to.
        self.schemas: list[dict[str, Any] | None] = []
        # The GBNF grammar each call was held to.
        self.grammars: list[str | None] = []
        # The DRY strength each call asked for (None: the client's own).
        self.no_repeats: list[float | None] = []
        self.summaries: list[list[dict[str, str]]] = []

    def stream(
        self,
        messages: Messages,
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        schema: dict[str, Any] | None = None,
        grammar: str | None = None,
        no_repeat: float | None = None,
    ) -> Iterator[str]:
        self.schemas.append(schema)
        self.grammars.append(grammar)
        self.no_repeats.append(no_repeat)
        text = self._next(messages)
        if not isinstance(text, str):
            raise TypeError("a native reply was asked for as a JSON action")
        yield from self._pieces(text)

    def _next(self, messages: Messages) -> Any:
        self.calls.append([dict(m) for m in messages])
        reply = self.replies[min(len(self.calls) - 1, len(self.replies) - 1)]
        if isinstance(reply, Exception):
            raise reply
        return reply(messages) if callable(reply) else reply

    def _pieces(self, text: str) -> list[str]:
        return [text[start : start + self.chunk] for start in range(0, len(text), self.chunk)]

    def complete(
        self,
        messages: Messages,
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> str:
        self.summaries.append([dict(m) for m in messages])
        return self.summary


class ScriptedTools(ScriptedStream):
    """A native tool-calling LLM, like ``LLMClient`` on a remote endpoint: ``stream_tools``
    streams each reply (a str as plain content, or deltas from ``call``) with every text cut
    into small chunks. Set ``tool_calling = "json_action"`` and it is driven like
    ``ScriptedStream`` (str replies are then the action text)."""

    def __init__(self, *replies: NativeReply, chunk: int = 7, summary: str = "A summary.") -> None:
        super().__init__(*replies, chunk=chunk, summary=summary)  # type: ignore[arg-type]
        self.tool_calling = "native"
        self.offered: list[list[dict[str, Any]]] = []

    def stream_tools(
        self,
        messages: Messages,
        tools: Sequence[dict[str, Any]],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Iterator[StreamDelta]:
        self.offered.append(list(tools))
        reply = self._next(messages)
        for delta in [TextDelta(reply)] if isinstance(reply, str) else reply:
            if isinstance(delta, TextDelta):
                yield from (TextDelta(piece) for piece in self._pieces(delta.text))
                continue
            yield ToolCallDelta(delta.index, delta.id, delta.name)
            for piece in self._pieces(delta.arguments):
                yield ToolCallDelta(delta.index, arguments=piece)


def agent_on(llm: object, stores: Stores, reply_tokens: int = 512) -> Agent:
    """An agent on ``llm`` that shows two retrieved memories a turn (drafts and speculation)."""
    config = ContextConfig(window_tokens=8192, reply_tokens=reply_tokens)
    context = ContextWindow(instructions(), stores.core, config)
    return Agent(llm, stores, context, AgentConfig(retrieved_memories=2))  # type: ignore[arg-type]


@contextmanager
def turn_under_way(agent: Agent) -> Iterator[None]:
    """The agent's window held by another thread, as a turn holds it, for the block."""
    held, release = threading.Event(), threading.Event()

    def hold_the_window() -> None:
        with agent.window.lock:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold_the_window)
    holder.start()
    try:
        assert held.wait(10)
        yield
    finally:
        release.set()
        holder.join()
