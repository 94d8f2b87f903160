"""Connecting the dots between what is new and what is known, by code (no LLM): two events
at the same time, an event coming up that an older memory mentions, an event just passed that
the user has not said how it went, the same person or place as an older fact, and a fact that
replaced an older one (the knowledge graph's)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np

from assistant.proactive.digest import Item
from assistant.tasks.reminders import addressed_to_the_user
from memory.graph.store import GraphStore, Triplet
from memory.records import Kind, MemoryRecord
from memory.stream import Filters, MemoryStream

# Events this close are at the same time ("locksmith Tuesday 4 pm", "choir Tuesday 4 pm").
CLASH_WITHIN = timedelta(minutes=30)
# Two memories this alike tell of the same event (said twice, or merged words): no clash.
SAME_EVENT_COSINE = 0.8
# Coming up: an event within this of now, told at least ``TOLD_BEFORE`` ago (one the user
# has just mentioned needs no telling back).
UPCOMING_WITHIN = timedelta(hours=24)
TOLD_BEFORE = timedelta(hours=6)
# Passed: an event this long ago (long enough to be over, recent enough to ask about).
PASSED_AFTER = timedelta(hours=2)
PASSED_BEFORE = timedelta(hours=36)
# A later word from the user this alike says how it went: nothing to ask.
FOLLOWED_UP_COSINE = 0.55
# The events looked at: the latest by event time (sorted there, future ones come first).
EVENTS_LOOKED_AT = 200
# How the agent's journal writes the user's words into the stream (Journal.observe).
USER_PREFIX = "User: "
# Facts linked to one new memory, at most.
LINKS_PER_MEMORY = 2
# What the user said, and what was drawn from it, is about their world; the assistant's own
# replies and the planner's chunks are not events of theirs.
EVENT_KINDS: tuple[Kind, ...] = ("observation", "fact", "reflection")


@dataclass(frozen=True)
class Event:
    record: MemoryRecord
    when: datetime


class Dots:
    def __init__(
        self,
        stream: MemoryStream,
        graph: GraphStore | None,
        reminded: Callable[[datetime], bool] = lambda when: False,
    ) -> None:
        """``reminded``: a reminder is set for shortly before that time (an event it covers
        is handled: nothing to bring up)."""
        self.stream = stream
        self.graph = graph
        self.reminded = reminded
        # Vectors fetched during one ``find`` (listings carry none).
        self._vectors: dict[str, np.ndarray] = {}

    def find(self, new: Sequence[MemoryRecord], since: datetime, now: datetime) -> list[Item]:
        self._vectors = {}
        events = self._events()
        items = self._clashes(new, events, now)
        items += self._upcoming(events, now)
        items += self._passed(events, now)
        if self.graph is not None:
            items += self._links(new)
            items += self._changed(since)
        return items

    def _events(self) -> list[Event]:
        page = self.stream.list_memories(
            Filters(kinds=EVENT_KINDS), sort="event_time", page_size=EVENTS_LOOKED_AT
        )
        return [
            Event(r, r.event_time)
            for r in page.items
            if r.event_time is not None and "user" in r.sources
        ]

    def _clashes(
        self, new: Sequence[MemoryRecord], events: list[Event], now: datetime
    ) -> list[Item]:
        fresh = {r.id for r in new}
        items = []
        for event in events:
            if event.record.id not in fresh or event.when < now:
                continue
            for other in events:
                if (
                    other.record.id == event.record.id
                    or abs(other.when - event.when) > CLASH_WITHIN
                ):
                    continue
                if self._alike(event.record, other.record) >= SAME_EVENT_COSINE:
                    continue
                first, second = sorted((event.record.id, other.record.id))
                items.append(
                    Item(
                        f"clash:{first}:{second}",
                        "clash",
                        f"{said(event.record)} and {said(other.record)}, both "
                        f"{_at(event.when, now)}",
                        actionable=True,
                        told=f"{to_user(event.record)}, and {to_user(other.record)}",
                    )
                )
        return items

    def _upcoming(self, events: list[Event], now: datetime) -> list[Item]:
        return [
            Item(
                f"upcoming:{e.record.id}",
                "upcoming",
                f"{said(e.record)} ({_at(e.when, now)})",
                actionable=True,
                told=to_user(e.record),
            )
            for e in events
            if now < e.when <= now + UPCOMING_WITHIN
            and e.record.created_at <= now - TOLD_BEFORE
            and not self.reminded(e.when)
        ]

    def _passed(self, events: list[Event], now: datetime) -> list[Item]:
        items = []
        for event in events:
            if not now - PASSED_BEFORE <= event.when <= now - PASSED_AFTER:
                continue
            if event.record.created_at >= event.when:
                continue  # told of afterwards: the user said how it went
            later = self.stream.list_memories(
                Filters(sources=("user",), since=event.when), page_size=20
            ).items
            if any(self._alike(event.record, r) >= FOLLOWED_UP_COSINE for r in later):
                continue
            items.append(
                Item(
                    f"passed:{event.record.id}",
                    "passed",
                    f"{said(event.record)} ({_at(event.when, now)})",
                    actionable=True,
                    told=to_user(event.record),
                )
            )
        return items

    def _links(self, new: Sequence[MemoryRecord]) -> list[Item]:
        graph = self.graph
        assert graph is not None
        gave = graph.triplets_from([r.id for r in new])
        items = []
        for record in new:
            facts = graph.get_triplets(gave.get(record.id, []))
            entities = sorted({e for t in facts for e in (t.subject, t.object)})
            older = [
                t
                for t in graph.triplets_about(entities, current_only=True)
                if record.id not in t.episodes and t.id not in {f.id for f in facts}
            ]
            for fact in older[:LINKS_PER_MEMORY]:
                items.append(
                    Item(
                        f"link:{record.id}:{fact.id}",
                        "link",
                        f"{said(record)} | known before: {fact.describe()}",
                    )
                )
        return items

    def _changed(self, since: datetime) -> list[Item]:
        graph = self.graph
        assert graph is not None
        retired = graph.retired_since(since)
        now_true = {
            t.id: t for t in graph.get_triplets([t.replaced_by for t in retired if t.replaced_by])
        }
        return [
            Item(f"changed:{old.id}", "changed", _change(old, now_true.get(old.replaced_by or "")))
            for old in retired
        ]

    def _alike(self, one: MemoryRecord, other: MemoryRecord) -> float:
        """The cosine similarity of two memories' vectors."""
        missing = [r.id for r in (one, other) if r.id not in self._vectors]
        for record in self.stream.get_many(missing, embeddings=True) if missing else ():
            if record.embedding is not None:
                self._vectors[record.id] = np.asarray(record.embedding, dtype=np.float32)
        if one.id not in self._vectors or other.id not in self._vectors:
            return 0.0
        a, b = self._vectors[one.id], self._vectors[other.id]
        norm = float(np.linalg.norm(a) * np.linalg.norm(b))
        return float(a @ b) / norm if norm else 0.0


def said(record: MemoryRecord) -> str:
    """A memory as the digest quotes it: the user's words in quotes, as they said them."""
    text = record.text
    if text.startswith(USER_PREFIX):
        return f'"{text[len(USER_PREFIX) :]}"'
    return text


def to_user(record: MemoryRecord) -> str:
    """A memory of the user's words as said to them: "I have the farrier on Wednesday at 4
    pm." -> "you have the farrier on Wednesday at 4 pm"."""
    text = record.text.removeprefix(USER_PREFIX).strip().rstrip(".!")
    return addressed_to_the_user(text)


def _at(when: datetime, now: datetime) -> str:
    local = when.astimezone(now.tzinfo)
    day = local.date() - now.date()
    if day.days == 0:
        return f"today at {local:%H:%M}"
    if day.days == 1:
        return f"tomorrow at {local:%H:%M}"
    if day.days == -1:
        return f"yesterday at {local:%H:%M}"
    return f"on {local:%a %d %b} at {local:%H:%M}"


def _change(old: Triplet, new: Triplet | None) -> str:
    if new is None:
        return f"no longer true: {old.text}"
    return f"{new.text} (before: {old.text})"
