"""Delegated tasks and the day plan as clients see them: the requests that list, start,
cancel or resume a task, answer a waiting task's question, plan the day or make the
heartbeat tick, carried out on the session's task manager, approvals and day planner."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from assistant.protocol.common import Failed
from assistant.protocol.tasks import (
    AnswerApproval,
    CancelTask,
    Delegate,
    GetTasks,
    PlanDay,
    PlanDone,
    ResumeTask,
    TaskAccepted,
    TaskRow,
    Tasks,
    Tick,
    Work,
)
from assistant.service.desks.common import MEMORY_ERRORS, one_line
from assistant.service.desks.task_rows import task_row
from assistant.service.hub import Client
from assistant.service.requests import Requests
from assistant.service.session import Opening
from assistant.tasks.approvals import ApprovalError, Approvals
from assistant.tasks.day_plan import PlanError
from assistant.tasks.heartbeat import Heartbeat
from assistant.tasks.manager import TaskError, TaskManager
from assistant.tasks.records import TaskRecord

log = logging.getLogger(__name__)

# Finished tasks listed to clients besides the running ones.
TASKS_SHOWN = 50


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
        day plan changed at a client's request."""
        self.opening = opening
        self.approvals = approvals
        self.state_text = state_text
        self.work = work
        self.heartbeat = heartbeat
        self.spawn = spawn
        self.planned = planned

    def register(self, requests: Requests) -> None:
        requests.add(GetTasks, self.show)
        requests.add(Delegate, self.change)
        requests.add(CancelTask, self.change)
        requests.add(ResumeTask, self.change)
        requests.add(AnswerApproval, self.change)
        requests.add(PlanDay, lambda client, request: self.spawn(self.plan(client, request)))
        requests.add(Tick, self.tick)

    def show(self, client: Client, request: GetTasks) -> None:
        client.send(Tasks(work=self.work(), tasks=self.rows()))

    def tick(self, client: Client, request: Tick) -> None:
        heartbeat = self.heartbeat()
        if heartbeat is not None:
            heartbeat.poke()

    def change(
        self, client: Client, request: Delegate | CancelTask | ResumeTask | AnswerApproval
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
        record = tasks.store.get(task_id)
        if record is None:
            raise TaskError(f"no task {task_id}")
        return record

    def rows(self) -> list[TaskRow]:
        session = self.opening.session
        if session is None:
            return []
        records = session.tasks.store.all()
        live = [r for r in records if not r.finished]
        done = [r for r in records if r.finished][:TASKS_SHOWN]
        return [task_row(r) for r in (*live, *done)]
