"""Intentions: what the agent means to come back to at a time ("ask Wilhelmina on Sunday
evening how the bee inspection went"), a future memory of its own. Unlike a reminder, which
tells the user a fixed text, an intention comes back to the agent: the heartbeat's digest
brings it when it is due, and the agent decides then what to do (ask, tell, or nothing). Kept
on disk, so one that comes due while the app is closed comes back at the next start."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from assistant.json_list import JsonList
from memory.records import utc_now

Status = Literal["pending", "done", "cancelled"]
TEXT_CHARS = 300


class IntentionError(ValueError):
    """An intention that cannot be kept or changed; the message is for whoever asked."""


class Intention(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=lambda: "i-" + secrets.token_hex(3))
    text: str
    due_at: datetime
    created_at: datetime = Field(default_factory=utc_now)
    # Who kept it: "agent" (at a heartbeat or in a turn), "user" (on screen).
    source: str = "agent"
    status: Status = "pending"
    # When a digest brought it back to the agent (it is brought once; moving it later brings
    # it again).
    surfaced_at: datetime | None = None


class IntentionStore:
    """The intentions in one JSON file. Thread-safe."""

    def __init__(self, path: Path) -> None:
        self._lock = threading.Lock()
        self._file = JsonList(path, Intention, "intentions")
        # What went wrong opening the file, for the user (it was moved aside, not lost).
        self.problem = self._file.problem

    def add(self, text: str, due_at: datetime, source: str = "agent") -> Intention:
        intention = Intention(text=_clean(text), due_at=due_at, source=source)
        with self._lock:
            self._file.items.append(intention)
            self._file.save()
        return intention

    def all(self) -> list[Intention]:
        """Every intention, soonest due first."""
        with self._lock:
            return sorted(self._file.items, key=lambda i: i.due_at)

    def pending(self) -> list[Intention]:
        return [i for i in self.all() if i.status == "pending"]

    def get(self, intention_id: str) -> Intention:
        with self._lock:
            for intention in self._file.items:
                if intention.id == intention_id:
                    return intention.model_copy()
        raise IntentionError(f"no intention {intention_id}")

    def due(self, now: datetime) -> list[Intention]:
        """Pending, due by ``now``, and not yet brought back to the agent."""
        return [i for i in self.pending() if i.due_at <= now and i.surfaced_at is None]

    def mark_surfaced(self, intention_ids: set[str], at: datetime) -> None:
        self._change(intention_ids, lambda i: setattr(i, "surfaced_at", at))

    def edit(
        self, intention_id: str, text: str | None = None, due_at: datetime | None = None
    ) -> Intention:
        """Change the text or the time; a time moved comes back again when it is due."""

        def change(intention: Intention) -> None:
            if text is not None:
                intention.text = _clean(text)
            if due_at is not None and due_at != intention.due_at:
                intention.due_at = due_at
                intention.surfaced_at = None

        self._change({intention_id}, change)
        return self.get(intention_id)

    def settle(self, intention_id: str, status: Status) -> Intention:
        """Mark it done or cancelled (or pending again)."""
        self._change({intention_id}, lambda i: setattr(i, "status", status))
        return self.get(intention_id)

    def _change(self, intention_ids: set[str], change: Callable[[Intention], None]) -> None:
        with self._lock:
            found = [i for i in self._file.items if i.id in intention_ids]
            if not found:
                raise IntentionError(f"no intention {', '.join(sorted(intention_ids))}")
            for intention in found:
                change(intention)
            self._file.save()


def _clean(text: str) -> str:
    text = " ".join(text.split())
    if not text:
        raise IntentionError("an intention needs some text")
    if len(text) > TEXT_CHARS:
        raise IntentionError(f"an intention is at most {TEXT_CHARS} characters")
    return text
