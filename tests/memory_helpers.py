"""Collaborators for memory tests: a controllable clock, a scripted structured LLM, and the
memory stream opened on a data folder."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory.database import open_database
from memory.embedder import Embedder
from memory.graph.store import GraphStore, Triplet
from memory.importance import ImportanceScale
from memory.locking import WriteLock
from memory.records import utc_now
from memory.rerating import RATING_FILE, ImportanceRating
from memory.stream import MemoryConfig, MemoryStream

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


def store_fact(
    store: GraphStore,
    subject: str,
    relation: str,
    obj: str,
    episodes: tuple[str, ...] = ("memory-1",),
    valid_from: datetime = START,
) -> Triplet:
    """A fact stored in the knowledge graph as the learner stores one (its names resolved to
    the entities of those names first)."""
    first = store.entity_named(subject) or store.add_entity(subject)
    second = store.entity_named(obj) or store.add_entity(obj)
    triplet = Triplet(
        id=uuid.uuid4().hex,
        subject=first.id,
        relation=relation,
        object=second.id,
        subject_name=first.name,
        object_name=second.name,
        episodes=episodes,
        valid_from=valid_from,
    )
    store.add_triplets([triplet])
    return triplet


def open_stream(
    data: Path,
    embedder: Embedder,
    scale: ImportanceScale | None = None,
    clock: Callable[[], datetime] = utc_now,
    config: MemoryConfig | None = None,
) -> MemoryStream:
    """The memory stream on the database and write lock in ``data``, rating on ``scale`` (as
    assistant.agent.wiring.open_stores opens it)."""
    rating = ImportanceRating(scale, data / RATING_FILE) if scale is not None else None
    return MemoryStream(
        open_database(data), WriteLock(data / "memory.lock"), embedder, rating, clock, config
    )
