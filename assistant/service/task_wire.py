"""The protocol's task messages: delegated tasks as clients show them, and the requests that
start, cancel or resume one or make the heartbeat tick. Each request carries the client's
``ref``; the answer (``TaskAccepted``, or ``Failed``) echoes it and goes to that client alone.
Fired reminders and the questions of tasks waiting for the user's permission go to every
client.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Literal

from assistant.service.wire import UserText, Wire
from assistant.tasks.records import ApprovalRequest, SubGoalStatus, TaskRecord, TaskStatus

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


class AnswerApproval(Wire):
    """Allow or refuse the tool call a waiting task asked about (``id``: the question's id,
    or the waiting task's)."""

    type: Literal["answer_approval"] = "answer_approval"
    ref: str
    id: str
    allow: bool


class PlanDay(Wire):
    """Re-plan the rest of today now, or break one plan chunk into finer ones (its ``id``)."""

    type: Literal["plan_day"] = "plan_day"
    ref: str
    action: Literal["replan", "break_down"]
    id: str | None = None


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


class ApprovalRow(Wire):
    id: str
    task_id: str
    tool: str
    # The call's arguments as JSON text (shown to the user as they are).
    arguments: str
    question: str
    asked_at: datetime


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
    waiting_for: ApprovalRow | None = None


class TaskAccepted(Wire):
    """The answer to a task request: the task as it now stands."""

    type: Literal["task_accepted"] = "task_accepted"
    ref: str
    task: TaskRow


class PlanDone(Wire):
    """The answer to ``plan_day``: what was done, in words."""

    type: Literal["plan_done"] = "plan_done"
    ref: str
    text: str


class ReminderFired(Wire):
    type: Literal["reminder"] = "reminder"
    id: str
    text: str
    due_at: datetime
    # Set when it fired late (the app was not running at its time): the announcement says so.
    late: bool
    announcement: str


class ApprovalAsked(Wire):
    """A task waits for the user to allow a call that acts outside the memory store (sent
    when it asks, and again at each heartbeat while it waits)."""

    type: Literal["approval_asked"] = "approval_asked"
    approval: ApprovalRow


class ApprovalSettled(Wire):
    """A question is answered (by some client) or withdrawn (its task was cancelled): windows
    still showing it close it."""

    type: Literal["approval_settled"] = "approval_settled"
    id: str
    task_id: str
    tool: str
    # None: withdrawn, nobody answered.
    allowed: bool | None


def approval_row(task_id: str, request: ApprovalRequest) -> ApprovalRow:
    return ApprovalRow(
        id=request.id,
        task_id=task_id,
        tool=request.tool,
        arguments=json.dumps(request.arguments, ensure_ascii=False),
        question=request.question,
        asked_at=request.asked_at,
    )


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
        waiting_for=(
            approval_row(record.id, record.waiting_for) if record.waiting_for is not None else None
        ),
    )
