"""The heartbeat: every ``interval`` (and on demand, and the moment a reminder comes due) the
service checks what it has to do: due reminders fire, tasks waiting for the user are brought
up again, reflection runs if its threshold is met, the day plan is made or revised if that
is due, and what changed since the agent last looked wakes it (assistant/proactive). A tick
with nothing to do asks no LLM anything: each part only acts on what it finds."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from assistant.tasks.records import TaskRecord
from assistant.tasks.reminders import Reminder, ReminderStore
from assistant.tasks.store import TaskStore

log = logging.getLogger(__name__)


@dataclass
class TickReport:
    at: datetime
    reminders: list[Reminder] = field(default_factory=list)
    waiting: list[TaskRecord] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.reminders or self.waiting)


@dataclass
class HeartbeatActions:
    """What a tick does with what it finds (the service wires these to its clients and agent)."""

    remind: Callable[[Reminder], None]
    reflect: Callable[[], None]
    waiting: Callable[[list[TaskRecord]], None] = lambda records: None
    # Planning that is due (today's plan, a re-plan, the next hours) starts in the background.
    plan: Callable[[], None] = lambda: None
    # What changed since the agent last looked wakes it (nothing new asks no LLM anything).
    look: Callable[[], None] = lambda: None


class Heartbeat:
    def __init__(
        self,
        reminders: ReminderStore,
        tasks: TaskStore,
        actions: HeartbeatActions,
        interval: timedelta,
        clock: Callable[[], datetime],
    ) -> None:
        self.reminders = reminders
        self.tasks = tasks
        self.actions = actions
        self.interval = interval
        self.clock = clock
        self.last_tick: datetime | None = None
        self.ticks = 0
        self._wake = asyncio.Event()
        self._forced = False

    def tick(self) -> TickReport:
        now = self.clock()
        self.last_tick = now
        self.ticks += 1
        report = TickReport(now)
        report.reminders = self.reminders.due(now)
        for reminder in report.reminders:
            self.actions.remind(reminder)
        if report.reminders:
            self.reminders.mark_fired(report.reminders)
        report.waiting = [t for t in self.tasks.all() if t.status == "waiting"]
        if report.waiting:
            self.actions.waiting(report.waiting)
        # Reflection counts the importance it has seen; below its threshold this is a no-op.
        self.actions.reflect()
        self.actions.plan()
        self.actions.look()
        log.debug("heartbeat: %d reminders, %d waiting", len(report.reminders), len(report.waiting))
        return report

    def next_wake(self) -> datetime:
        """The next periodic tick, or sooner a reminder's time."""
        base = self.last_tick or self.clock()
        wake = base + self.interval
        due = self.reminders.next_due()
        return min(wake, due) if due is not None else wake

    def poke(self) -> None:
        """Tick now (on demand); call on the loop's thread."""
        self._forced = True
        self._wake.set()

    def changed(self) -> None:
        """A reminder was added: the next wake may be sooner (call on the loop's thread)."""
        self._wake.set()

    async def run(self) -> None:
        """Tick at start (reminders due while the app was closed fire now, marked late), then
        whenever the next wake comes; ticks run in a worker thread."""
        await self._tick()
        while True:
            delay = (self.next_wake() - self.clock()).total_seconds()
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), delay)
            self._wake.clear()
            forced, self._forced = self._forced, False
            if forced or self.clock() >= self.next_wake():
                await self._tick()

    async def _tick(self) -> None:
        try:
            await asyncio.to_thread(self.tick)
        except Exception:  # one failed tick (a full disk) must not stop the heartbeat
            log.exception("heartbeat tick failed")
            self.last_tick = self.clock()
