"""The protocol's task messages: delegated tasks as clients show them, and the requests that
start, cancel or resume one or make the heartbeat tick. Each request carries the client's
``ref``; the answer (``TaskAccepted``, or ``Failed``) echoes it and goes to that client alone.
Fired reminders go to every client.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from assistant.service.wire import UserText, Wire
from assistant.tasks.records import SubGoalStatus, TaskRecord, TaskStatus

# Client to service


class Delegate(Wire):
    """Hand a goal to a sub-agent (``brain ask --delegate``), as the master agent would."""

    type: Literal["delegate"] = "delegate"
    ref: str
    goal: UserText


class CancelTask(Wire):
    type: Literal["cancel_task"] = "cancel_task"
    ref: str
    id: str


class ResumeTask(Wire):
    """Run a task that a restart interrupted again, from its goal."""

    type: Literal["resume_task"] = "resume_task"
    ref: str
    id: str


class Tick(Wire):
    """Make the heartbeat tick now."""

    type: Literal["tick"] = "tick"


# Service to client


class SubGoalRow(Wire):
    goal: str
    reason: str
    status: SubGoalStatus


class StepRow(Wire):
    number: int
    tool: str
    result: str
    failed: bool


class TaskRow(Wire):
    id: str
    goal: str
    status: TaskStatus
    created_at: datetime
    requested_by: str
    current_step: str
    plan: list[SubGoalRow]
    steps: list[StepRow]
    result: str | None
    reason: str | None
    resumable: bool
    elapsed_s: float
    llm_calls: int
    tokens: int


class TaskAccepted(Wire):
    """The answer to a task request: the task as it now stands."""

    type: Literal["task_accepted"] = "task_accepted"
    ref: str
    task: TaskRow


class ReminderFired(Wire):
    type: Literal["reminder"] = "reminder"
    id: str
    text: str
    due_at: datetime
    # Set when it fired late (the app was not running at its time): the announcement says so.
    late: bool
    announcement: str


def task_row(record: TaskRecord) -> TaskRow:
    return TaskRow(
        id=record.id,
        goal=record.goal,
        status=record.status,
        created_at=record.created_at,
        requested_by=record.requested_by,
        current_step=record.current_step,
        plan=[SubGoalRow(goal=g.goal, reason=g.reason, status=g.status) for g in record.plan],
        steps=[
            StepRow(number=s.number, tool=s.tool, result=s.result, failed=s.failed)
            for s in record.steps
        ],
        result=record.result,
        reason=record.reason,
        resumable=record.resumable,
        elapsed_s=round(record.elapsed_s(), 1),
        llm_calls=record.cost.llm_calls,
        tokens=record.cost.tokens,
    )
