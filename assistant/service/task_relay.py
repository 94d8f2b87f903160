"""Delegated tasks, reminders and the heartbeat, between the task manager and the clients:
tasks start running when the memory opens, a finished task wakes the agent, a due reminder
and a task's question go to every client (and are spoken), and the heartbeat ticks."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from assistant.agent.events import MemoryChanged, ReminderDue
from assistant.protocol.common import Notice, Wire
from assistant.protocol.tasks import ApprovalAsked, ApprovalRow, ApprovalSettled, ReminderFired
from assistant.service.desks.task_rows import approval_row
from assistant.service.jobs import FromThread
from assistant.settings import Settings
from assistant.tasks.approvals import Approvals
from assistant.tasks.heartbeat import Heartbeat, HeartbeatActions
from assistant.tasks.manager import TaskManager
from assistant.tasks.reminders import Reminder, ReminderStore

log = logging.getLogger(__name__)


class TaskRelay:
    def __init__(
        self,
        settings: Settings,
        broadcast: Callable[[Wire], None],
        from_thread: FromThread,
        note: Callable[[MemoryChanged | ReminderDue], None],
        say_aloud: Callable[[str], None],
    ) -> None:
        """``from_thread`` makes a handler callable from other threads; ``note`` tells the
        agent something before its next turn; ``say_aloud`` speaks a notice."""
        self.settings = settings
        self.broadcast = broadcast
        self.from_thread = from_thread
        self.note = note
        self.say_aloud = say_aloud
        self.heartbeat: Heartbeat | None = None
        self.jobs: list[asyncio.Task[None]] = []
        self._asked = from_thread(self._approval_asked)
        self._settled = from_thread(self._broadcast_settled)
        self._reminder = from_thread(lambda _: self._reminder_added())

    def approvals(self) -> Approvals:
        """The questions of sub-agents waiting for the user's permission, relayed to every
        client from the sub-agents' threads."""
        return Approvals(
            on_asked=lambda task_id, request: self._asked(approval_row(task_id, request)),
            on_settled=lambda task, request, allowed: self._settled(
                ApprovalSettled(id=request.id, task_id=task, tool=request.tool, allowed=allowed)
            ),
        )

    def reminder_added(self) -> None:
        """From any thread: a reminder was added, the heartbeat looks again."""
        self._reminder(None)

    def start(
        self,
        loop: asyncio.AbstractEventLoop,
        tasks: TaskManager,
        reminders: ReminderStore,
        approvals: Approvals,
        reflect: Callable[[], None],
        plan: Callable[[], None],
        look: Callable[[], None],
        clock: Callable[[], datetime],
    ) -> None:
        """Delegated tasks start running; the heartbeat starts ticking (reminders due while
        the app was closed fire now, marked late)."""
        for problem in [*tasks.store.problems, *([reminders.problem] if reminders.problem else [])]:
            self.broadcast(Notice(text=problem, level="warning"))
        interrupted = tasks.start(loop)
        if interrupted:
            names = ", ".join(f"{r.id} ({r.goal[:40]})" for r in interrupted)
            text = f"tasks interrupted by the restart, resumable: {names}"
            self.broadcast(Notice(text=text, level="warning"))
            self.note(MemoryChanged(text))
        self.heartbeat = Heartbeat(
            reminders,
            tasks.store,
            HeartbeatActions(
                remind=self.from_thread(self._remind),
                reflect=reflect,
                waiting=lambda records: self._ask_again(approvals),
                plan=plan,
                look=look,
            ),
            timedelta(minutes=self.settings.tasks.heartbeat_minutes),
            clock,
        )
        self.jobs.append(asyncio.create_task(self.heartbeat.run()))

    async def close(self) -> None:
        for job in self.jobs:
            job.cancel()
        await asyncio.gather(*self.jobs, return_exceptions=True)

    def _reminder_added(self) -> None:
        if self.heartbeat is not None:
            self.heartbeat.changed()

    def _remind(self, reminder: object) -> None:
        """A reminder is due: shown to every client, spoken if voice is on, and noted for the
        agent (no LLM call)."""
        if not isinstance(reminder, Reminder):
            return
        text = reminder.announcement()
        log.info("%s", text)
        self.broadcast(
            ReminderFired(
                id=reminder.id,
                text=reminder.text,
                due_at=reminder.due_at,
                late=reminder.late_by() is not None,
                announcement=text,
            )
        )
        self.say_aloud(text)
        self.note(ReminderDue(text))

    def _approval_asked(self, approval: object) -> None:
        """A task waits for the user to allow a call: every client is asked, and a user
        away from the screen hears that it waits."""
        if not isinstance(approval, ApprovalRow):
            return
        log.info("task %s asks to run %s", approval.task_id, approval.tool)
        self.broadcast(ApprovalAsked(approval=approval))
        self.say_aloud(f"A task needs your permission to run {approval.tool.replace('__', ' ')}.")

    def _broadcast_settled(self, settled: object) -> None:
        if isinstance(settled, ApprovalSettled):
            self.broadcast(settled)

    def _ask_again(self, approvals: Approvals) -> None:
        """At a heartbeat, the questions still unanswered go out again (from the tick's
        thread), so a window opened since shows them."""
        asked = self.from_thread(
            lambda approval: (
                self.broadcast(ApprovalAsked(approval=approval))
                if isinstance(approval, ApprovalRow)
                else None
            )
        )
        for task_id, request in approvals.pending():
            asked(approval_row(task_id, request))
