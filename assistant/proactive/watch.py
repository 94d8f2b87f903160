"""What changed since the agent last looked: the heartbeat asks ``look`` every tick, and only a
digest with something in it wakes the agent (a tick with nothing new asks no LLM anything).
What was given to the agent is remembered on disk (``given``), so after a restart nothing is
given twice and nothing due is missed."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from pathlib import Path

from pydantic import BaseModel

from assistant.json_list import load_state, save_state
from assistant.proactive.digest import Digest, Item
from assistant.proactive.dots import Dots, said
from assistant.proactive.intentions import IntentionStore
from assistant.tasks.day_plan import PlanPiece
from assistant.tasks.records import TaskRecord
from assistant.tasks.reminders import ReminderStore
from assistant.tasks.store import TaskStore
from memory.records import MemoryRecord
from memory.stream import Filters, MemoryStream

log = logging.getLogger(__name__)

# Keys remembered as given (older ones are of things long past).
GIVEN_KEPT = 2000
# New memories in one digest, at most (the newest; a long paste is one memory anyway).
NEW_MEMORIES = 12
# A reminder this close is in the digest (it fires by itself; the agent may prepare).
REMINDER_AHEAD = timedelta(hours=1)


class WatchState(BaseModel):
    last_look: datetime | None = None
    given: list[str] = []


class Watch:
    def __init__(
        self,
        stream: MemoryStream,
        reminders: ReminderStore,
        tasks: TaskStore,
        intentions: IntentionStore,
        dots: Dots,
        path: Path,
        clock: Callable[[], datetime],
        plan_today: Callable[[datetime], Sequence[PlanPiece]] = lambda now: (),
        ahead: timedelta = timedelta(minutes=5),
    ) -> None:
        """``ahead``: how far ahead a plan chunk is "starting" (the heartbeat's interval)."""
        self.stream = stream
        self.reminders = reminders
        self.tasks = tasks
        self.intentions = intentions
        self.dots = dots
        self.path = path
        self.clock = clock
        self.plan_today = plan_today
        self.ahead = ahead
        self._lock = threading.Lock()
        self.state = self._load()

    def look(self) -> Digest:
        """What changed since the last digest given; empty when nothing did."""
        now = self.clock()
        with self._lock:
            since = self.state.last_look
            given = set(self.state.given)
        if since is None:
            # The first look ever: what was there before is not news.
            self.given(Digest(now))
            since = now
        new = self._new_memories(since)
        items = [Item(f"memory:{r.id}", "memory", said(r)) for r in new]
        items += [
            Item(f"intention:{i.id}", "intention", i.text, actionable=True)
            for i in self.intentions.due(now)
        ]
        items += [
            Item(
                f"reminder:{r.id}",
                "reminder",
                f"{r.text} (at {r.due_at.astimezone(now.tzinfo):%H:%M})",
            )
            for r in self.reminders.pending()
            if r.due_at <= now + REMINDER_AHEAD
        ]
        for task in self.tasks.all():
            if task.finished and not task.reported:
                items.append(Item(f"task:{task.id}", "task", _outcome(task), actionable=True))
            elif task.status == "waiting":
                items.append(Item(f"task:{task.id}:waiting", "waiting", task.goal))
        items += [
            Item(f"plan:{p.record.id}", "plan", p.record.text, actionable=p.by_user)
            for p in self.plan_today(now)
            if now <= p.start <= now + self.ahead
        ]
        try:
            items += self.dots.find(new, since, now)
        except (OSError, ValueError) as error:  # the dots are extra: the rest still goes
            log.warning("heartbeat: could not connect the dots: %s", error)
        fresh, seen = [], set(given)
        for item in items:
            if item.key not in seen:
                fresh.append(item)
                seen.add(item.key)
        return Digest(now, tuple(fresh))

    def given(self, digest: Digest) -> None:
        """The digest reached the agent: its items are not given again."""
        with self._lock:
            keys = [*self.state.given, *(item.key for item in digest.items)]
            self.state = WatchState(last_look=digest.at, given=keys[-GIVEN_KEPT:])
            self._save()
        due = {i.key.split(":", 1)[1] for i in digest.items if i.kind == "intention"}
        if due:
            self.intentions.mark_surfaced(due, digest.at)

    def _new_memories(self, since: datetime) -> list[MemoryRecord]:
        page = self.stream.list_memories(Filters(since=since), page_size=NEW_MEMORIES * 3)
        new = [
            r
            for r in page.items
            if r.kind != "plan" and "assistant" not in r.sources and r.created_at > since
        ]
        return list(reversed(new[:NEW_MEMORIES]))

    def _load(self) -> WatchState:
        # Lost state only means one digest may repeat what an earlier one said.
        return load_state(self.path, WatchState, "the heartbeat's state")

    def _save(self) -> None:
        save_state(self.path, self.state)


def _clock(moment: datetime, now: datetime) -> str:
    return f"{moment.astimezone(now.tzinfo):%H:%M}"


def _outcome(task: TaskRecord) -> str:
    """A finished task as the digest tells it: what was asked, and what came of it."""
    if task.status == "done":
        return f'"{task.goal}": {task.result or "done, with no result written"}'
    return f'"{task.goal}" {task.status}: {task.reason or "no reason given"}'
