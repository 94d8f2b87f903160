"""The protocol's task messages: what the service is doing and delegated tasks as clients
show them, and the requests that start, cancel or resume one, plan the day, clear the plans
made before the planner was held to the user's own time, list, edit or settle the agent's
intentions, or make the heartbeat tick. Each request that carries the client's ``ref`` has its
answer (``TaskAccepted``, ``PlanDone``, ``OldPlans``, ``Intentions``, or ``Failed``) echo it,
to that client alone. Fired reminders and the questions of tasks waiting for the user's
permission go to every client.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from assistant.protocol.common import Answer, ClientText, Wire

# The task records' own (assistant/tasks/records.py), written out here so that a client does
# not import the memory package (numpy and pyarrow) to speak the protocol; a test keeps them
# equal.
TaskStatus = Literal["queued", "running", "waiting", "done", "failed", "cancelled"]
SubGoalStatus = Literal["todo", "doing", "done", "dropped"]
# The intentions' own (assistant/proactive/intentions.py), for the same reason.
IntentionStatus = Literal["pending", "done", "cancelled"]

# Client to service


class GetTasks(Wire):
    type: Literal["tasks"] = "tasks"


class Delegate(Wire):
    """Hand a goal to a sub-agent (``brain ask --delegate``), as the master agent would."""

    type: Literal["delegate"] = "delegate"
    ref: str
    goal: ClientText


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


class GetOldPlans(Wire):
    """List the plans the day planner made before it was held to what the user said about
    their time (they may come from plain facts about people)."""

    type: Literal["old_plans"] = "old_plans"
    ref: str


class ClearOldPlans(Wire):
    """Delete those plans (soft: restorable on the memory screen, each in the history)."""

    type: Literal["clear_old_plans"] = "clear_old_plans"
    ref: str


class GetIntentions(Wire):
    """List the agent's intentions (what it means to come back to at a time)."""

    type: Literal["intentions"] = "intentions"
    ref: str


class EditIntention(Wire):
    """Change an intention's text, its due time, or both (None: left as it is)."""

    type: Literal["edit_intention"] = "edit_intention"
    ref: str
    id: str
    text: ClientText | None = None
    # As the user types it: "tomorrow at 9", "in 2 hours", "19:00", an ISO time.
    due: ClientText | None = None


class SettleIntention(Wire):
    """Mark an intention done or cancelled, or pending again."""

    type: Literal["settle_intention"] = "settle_intention"
    ref: str
    id: str
    status: IntentionStatus


class Tick(Wire):
    """Make the heartbeat tick now."""

    type: Literal["tick"] = "tick"


TaskRequest = (
    GetTasks
    | Delegate
    | CancelTask
    | ResumeTask
    | AnswerApproval
    | PlanDay
    | GetOldPlans
    | ClearOldPlans
    | GetIntentions
    | EditIntention
    | SettleIntention
    | Tick
)


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


class Work(Wire):
    kind: Literal["reply", "queued", "ratings", "switch"]
    description: str
    seconds: float = 0.0


class Tasks(Wire):
    type: Literal["tasks"] = "tasks"
    work: list[Work]
    # Delegated tasks, newest first: those running or waiting, then the recent others.
    tasks: list[TaskRow] = []


class TaskAccepted(Answer):
    """The answer to a task request: the task as it now stands."""

    type: Literal["task_accepted"] = "task_accepted"
    task: TaskRow


class PlanDone(Answer):
    """The answer to ``plan_day`` and ``clear_old_plans``: what was done, in words."""

    type: Literal["plan_done"] = "plan_done"
    text: str


class OldPlans(Answer):
    """The answer to ``old_plans``: the ids of the plans made before ``before``."""

    type: Literal["old_plans"] = "old_plans"
    ids: list[str]
    before: datetime


class IntentionRow(Wire):
    id: str
    text: str
    due_at: datetime
    status: IntentionStatus
    # Who kept it: "agent" or "user".
    source: str


class Intentions(Answer):
    """The answer to an intention request: every intention, soonest due first, and what was
    done, in words (empty for a listing)."""

    type: Literal["intentions"] = "intentions"
    rows: list[IntentionRow]
    text: str = ""


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


TaskAnswer = TaskAccepted | PlanDone | OldPlans | Intentions
TaskUpdate = TaskAnswer | Tasks | ReminderFired | ApprovalAsked | ApprovalSettled
