"""Collaborators for memory tests: a controllable clock and a scripted structured LLM."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

START = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self, start: datetime = START) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


Reply = dict[str, Any] | Exception | Callable[[Sequence[dict[str, str]]], dict[str, Any]]


class ScriptedLLM:
    """Answers complete_json from a script (one reply per call; the last one repeats)."""

    def __init__(self, *replies: Reply, gate: threading.Event | None = None) -> None:
        self.replies = list(replies)
        self.calls: list[Sequence[dict[str, str]]] = []
        self.gate = gate

    def complete_json(
        self,
        messages: Sequence[dict[str, str]],
        schema: dict[str, Any],
        *,
        max_tokens: int | None = None,
        temperature: float | None = 0.0,
    ) -> dict[str, Any]:
        if self.gate is not None:
            self.gate.wait(timeout=60)
        self.calls.append(messages)
        reply = self.replies[min(len(self.calls) - 1, len(self.replies) - 1)]
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            return reply(messages)
        return reply
