"""Collaborators for agent tests: a scripted streaming LLM and action builders."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

Messages = Sequence[dict[str, str]]
StreamReply = str | Exception | Callable[[Messages], str]


def action(tool: str, heartbeat: bool = False, **arguments: Any) -> str:
    return json.dumps({"tool": tool, "arguments": arguments, "request_heartbeat": heartbeat})


def say(message: str, heartbeat: bool = False) -> str:
    return action("send_message", heartbeat, message=message)


class ScriptedStream:
    """Streams each scripted reply in small chunks (the last one repeats); ``complete`` (the
    summaries) answers ``summary``."""

    def __init__(self, *replies: StreamReply, chunk: int = 7, summary: str = "A summary.") -> None:
        self.replies = list(replies)
        self.chunk = chunk
        self.summary = summary
        self.calls: list[list[dict[str, str]]] = []
        self.summaries: list[list[dict[str, str]]] = []

    def stream(
        self,
        messages: Messages,
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        schema: dict[str, Any] | None = None,
    ) -> Iterator[str]:
        self.calls.append([dict(m) for m in messages])
        reply = self.replies[min(len(self.calls) - 1, len(self.replies) - 1)]
        if isinstance(reply, Exception):
            raise reply
        text = reply(messages) if callable(reply) else reply
        for start in range(0, len(text), self.chunk):
            yield text[start : start + self.chunk]

    def complete(
        self,
        messages: Messages,
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> str:
        self.summaries.append([dict(m) for m in messages])
        return self.summary
