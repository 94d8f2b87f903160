"""Delegated tasks, the day plan, the agent's intentions and reminders as clients see them:
the requests that list, start, cancel, resume or read a task, answer a waiting task's
question, plan the day or read today's plan, clear the plans made before the planner was held
to the user's time, list, edit or settle an intention, list or set a reminder, or make the
heartbeat tick, carried out on the session's task manager, approvals, day planner, intentions
and reminders."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Any, NoReturn

from assistant.proactive.intentions import Intention, IntentionError
from assistant.protocol.common import Failed
from assistant.protocol.tasks import (
    AddReminder,
    AnswerApproval,
    CancelTask,
    ClearOldPlans,
    DayPlan,
    Delegate,
    EditIntention,
    GetDayPlan,
    GetIntentions,
    GetOldPlans,
    GetReminders,
    GetTask,
    GetTasks,
    IntentionRow,
    Intentions,
    OldPlans,
    PlanDay,
    PlanDone,
    PlanRow,
    ReminderRow,
    Reminders,
    ResumeTask,
    SettleIntention,
    TaskAccepted,
    TaskRow,
    Tasks,
    Tick,
    Work,
)
from assistant.service.desks.common import MEMORY_ERRORS, one_line, quote
from assistant.service.desks.task_rows import task_row
from assistant.service.hub import Client
from assistant.service.requests import Requests
from assistant.service.session import Opening, Session
from assistant.tasks.approvals import ApprovalError, Approvals
from assistant.tasks.day_plan import PlanError
from assistant.tasks.heartbeat import Heartbeat
from assistant.tasks.manager import TaskError, TaskManager
from assistant.tasks.old_plans import GROUNDED_SINCE, clear_old_plans, old_plans
from assistant.tasks.records import TaskRecord
from assistant.tasks.reminders import (
    Reminder,
    ReminderError,
    addressed_to_the_user,
    reminder_time,
    says_am_pm,
    spoken_time,
)

log = logging.getLogger(__name__)

# Finished tasks listed to clients besides the running ones.
TASKS_SHOWN = 50
# What settling an intention did, in words.
SETTLED = {"done": "marked done", "cancelled": "cancelled", "pending": "reopened"}


class TaskDesk:
    def __init__(
        self,
        opening: Opening,
        approvals: Approvals,
        state_text: Callable[[], str],
        work: Callable[[], list[Work]],
        heartbeat: Callable[[], Heartbeat | None],
        spawn: Callable[[Coroutine[Any, Any, None]], None],
        planned: Callable[[], None],
    ) -> None:
        """``opening``: the session's task manager and day planner, once the memory is open;
        ``approvals``: the questions of tasks waiting for the user; ``work``: what the service
        is doing; ``spawn`` runs a request in the background; ``planned`` is called when the
        day plan or an intention changed at a client's request (it tells every client, so
        their plans panes read them again)."""
        self.opening = opening
        self.approvals = approvals
        self.state_text = state_text
        self.work = work
        self.heartbeat = heartbeat
        self.spawn = spawn
        self.planned = planned

    def register(self, requests: Requests) -> None:
        requests.add(GetTasks, self.show)
        requests.add(GetTask, self.change)
        requests.add(Delegate, self.change)
        requests.add(CancelTask, self.change)
        requests.add(ResumeTask, self.change)
        requests.add(AnswerApproval, self.change)
        requests.add(PlanDay, lambda client, request: self.spawn(self.plan(client, request)))
        requests.add(GetDayPlan, lambda client, request: self.spawn(self.today(client, request)))
        requests.add(GetOldPlans, lambda client, request: self.spawn(self.old(client, request)))
        requests.add(ClearOldPlans, lambda client, request: self.spawn(self.old(client, request)))
        requests.add(GetIntentions, self.intentions)
        requests.add(EditIntention, self.intentions)
        requests.add(SettleIntention, self.intentions)
        requests.add(GetReminders, self.reminders)
        requests.add(AddReminder, self.reminders)
        requests.add(Tick, self.tick)

    def show(self, client: Client, request: GetTasks) -> None:
        client.send(Tasks(work=self.work(), tasks=self.rows()))

    def tick(self, client: Client, request: Tick) -> None:
        heartbeat = self.heartbeat()
        if heartbeat is not None:
            heartbeat.poke()

    def change(
        self,
        client: Client,
        request: GetTask | Delegate | CancelTask | ResumeTask | AnswerApproval,
    ) -> None:
        session = self.opening.session
        if session is None:
            client.send(
                Failed(ref=request.ref, text=f"tasks are not available: {self.state_text()}")
            )
            return
        tasks = session.tasks
        try:
            match request:
                case GetTask():
                    record = tasks.store.get(request.id) or _no_task(request.id)
                case Delegate():
                    record = tasks.delegate(request.goal, requested_by=client.name)
                case CancelTask():
                    record = tasks.cancel(request.id)
                case ResumeTask():
                    record = tasks.resume(request.id, requested_by=client.name)
                case AnswerApproval():
                    record = self._answer(tasks, request)
        except (TaskError, ApprovalError, OSError) as error:
            client.send(Failed(ref=request.ref, text=one_line(error)))
            return
        client.send(TaskAccepted(ref=request.ref, task=task_row(record)))

    async def plan(self, client: Client, request: PlanDay) -> None:
        """Re-plan the day or break a chunk down, in a worker thread (an LLM call)."""
        session = self.opening.session
        if session is None:
            client.send(Failed(ref=request.ref, text=f"no day plan yet: {self.state_text()}"))
            return
        planner = session.planner
        try:
            if request.action == "replan":
                text = await asyncio.to_thread(planner.replan, "the user asked for a new plan")
            elif request.id is None:
                raise PlanError("say which plan chunk to break down")
            else:
                text = await asyncio.to_thread(planner.break_down, request.id)
        except (PlanError, *MEMORY_ERRORS) as error:
            client.send(Failed(ref=request.ref, text=one_line(error)))
            return
        log.info("%s: %s", client.name, text)
        client.send(PlanDone(ref=request.ref, text=text))
        self.planned()

    async def today(self, client: Client, request: GetDayPlan) -> None:
        """Today's plan, read in a worker thread (the memory store)."""
        session = self.opening.session
        if session is None:
            client.send(Failed(ref=request.ref, text=f"no day plan yet: {self.state_text()}"))
            return
        try:
            pieces = await asyncio.to_thread(session.planner.today)
        except MEMORY_ERRORS as error:
            client.send(Failed(ref=request.ref, text=one_line(error)))
            return
        rows = [
            PlanRow(
                id=p.record.id,
                text=p.record.text,
                start=p.start,
                end=p.end,
                parent=p.parent,
                by_user=p.by_user,
            )
            for p in pieces
        ]
        client.send(DayPlan(ref=request.ref, rows=rows))

    async def old(self, client: Client, request: GetOldPlans | ClearOldPlans) -> None:
        """List or clear the plans made before the planner was held to the user's time, in a
        worker thread (clearing deletes them one by one)."""
        session = self.opening.session
        if session is None:
            client.send(Failed(ref=request.ref, text=f"no plans yet: {self.state_text()}"))
            return
        stream = session.stores.stream
        try:
            if isinstance(request, GetOldPlans):
                records = await asyncio.to_thread(old_plans, stream)
                client.send(
                    OldPlans(ref=request.ref, ids=[r.id for r in records], before=GROUNDED_SINCE)
                )
                return
            cleared = await asyncio.to_thread(clear_old_plans, stream)
        except MEMORY_ERRORS as error:
            client.send(Failed(ref=request.ref, text=one_line(error)))
            return
        text = (
            f"cleared {cleared} plan{'' if cleared == 1 else 's'} made before "
            f"{GROUNDED_SINCE.astimezone():%d %b %Y %H:%M} (restorable on the memory screen)"
        )
        log.info("%s: %s", client.name, text)
        client.send(PlanDone(ref=request.ref, text=text))
        self.planned()

    def intentions(
        self, client: Client, request: GetIntentions | EditIntention | SettleIntention
    ) -> None:
        session = self.opening.session
        if session is None:
            client.send(Failed(ref=request.ref, text=f"no intentions yet: {self.state_text()}"))
            return
        try:
            match request:
                case GetIntentions():
                    text = ""
                case EditIntention():
                    text = self._edit(session, request)
                case SettleIntention():
                    intention = session.intentions.settle(request.id, request.status)
                    text = f"{SETTLED[request.status]} {quote(intention.text)}"
            rows = [intention_row(i) for i in session.intentions.all()]
        except (IntentionError, ReminderError, OSError) as error:
            client.send(Failed(ref=request.ref, text=one_line(error)))
            return
        client.send(Intentions(ref=request.ref, rows=rows, text=text))
        if text:
            log.info("%s: %s", client.name, text)
            self.planned()

    def _edit(self, session: Session, request: EditIntention) -> str:
        """Change an intention's text or time (as the user typed it); what was done, in
        words."""
        if request.text is None and request.due is None:
            raise IntentionError("say what to change: the text or the time")
        due = None if request.due is None else _future(request.due, session)
        intention = session.intentions.edit(request.id, text=request.text, due_at=due)
        when = spoken_time(intention.due_at, session.clock())
        return f"changed {quote(intention.text)}, due {when}"

    def reminders(self, client: Client, request: GetReminders | AddReminder) -> None:
        session = self.opening.session
        if session is None:
            client.send(Failed(ref=request.ref, text=f"no reminders yet: {self.state_text()}"))
            return
        try:
            text = "" if isinstance(request, GetReminders) else self._remind(session, request)
            rows = [reminder_row(r) for r in session.reminders.pending()]
        except (ReminderError, OSError) as error:
            client.send(Failed(ref=request.ref, text=one_line(error)))
            return
        client.send(Reminders(ref=request.ref, rows=rows, text=text))
        if text:
            log.info("%s: %s", client.name, text)

    def _remind(self, session: Session, request: AddReminder) -> str:
        """Set a reminder as the agent's set_reminder does; what was done, in words."""
        due = _future(request.when, session)
        # Written by a model on the user's behalf, like the agent's: "my" is the user's.
        text = addressed_to_the_user(request.text)
        reminder = session.reminders.add(text, due, source=request.source)
        heartbeat = self.heartbeat()
        if heartbeat is not None:
            heartbeat.changed()  # it may be due before the next wake
        twelve_hour = says_am_pm(request.when)
        return f"I'll remind you {spoken_time(due, session.clock(), twelve_hour)}: {reminder.text}"

    def _answer(self, tasks: TaskManager, request: AnswerApproval) -> TaskRecord:
        """Allow or refuse a waiting task's call, named by the question's id or the task's."""
        pending = self.approvals.pending()
        approval = next((a for t, a in pending if request.id in (a.id, t)), None)
        if approval is None:
            raise ApprovalError(f"nothing is waiting for an answer under {request.id}")
        task_id = self.approvals.answer(approval.id, request.allow)
        log.info(
            "task %s: %s %s", task_id, approval.tool, "allowed" if request.allow else "refused"
        )
        return tasks.store.get(task_id) or _no_task(task_id)

    def rows(self) -> list[TaskRow]:
        session = self.opening.session
        if session is None:
            return []
        records = session.tasks.store.all()
        live = [r for r in records if not r.finished]
        done = [r for r in records if r.finished][:TASKS_SHOWN]
        return [task_row(r) for r in (*live, *done)]


def _no_task(task_id: str) -> NoReturn:
    raise TaskError(f"no task {task_id}")


def _future(when: str, session: Session) -> datetime:
    """The time ``when`` names (as the user would say it), which must be to come."""
    now = session.clock()
    due = reminder_time(when, now)
    if due <= now:
        raise ReminderError(f"{when.strip()!r} is not in the future")
    return due


def reminder_row(reminder: Reminder) -> ReminderRow:
    return ReminderRow(
        id=reminder.id, text=reminder.text, due_at=reminder.due_at, source=reminder.source
    )


def intention_row(intention: Intention) -> IntentionRow:
    return IntentionRow(
        id=intention.id,
        text=intention.text,
        due_at=intention.due_at,
        status=intention.status,
        source=intention.source,
    )
