"""The protocol's task messages: what the service is doing and delegated tasks as clients
show them, and the requests that start, cancel, resume or read one, plan the day or read
today's plan, clear the plans made before the planner was held to the user's own time, list,
edit or settle the agent's intentions, list or set reminders, or make the heartbeat tick. Each
request that carries the client's ``ref`` has its answer (``TaskAccepted``, ``PlanDone``,
``DayPlan``, ``OldPlans``, ``Intentions``, ``Reminders``, or ``Failed``) echo it, to that
client alone. Fired reminders and the questions of tasks waiting for the user's permission go
to every client.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from assistant.protocol.common import Answer, ClientText, Wire

# The task records' own (assistant/tasks/records.py), written out here so that a client does
# not import the memory package (numpy and pyarrow) to speak the protocol; a test keeps them
# equal.
TaskStatus = Literal["queued", "running", "waiting", "done", "failed", "cancelled"]
SubGoalStatus = Literal["todo", "doing", "done", "dropped"]
# The intentions' own (assistant/proactive/intentions.py), for the same reason.
IntentionStatus = Literal["pending", "done", "cancelled"]

# The longest text a client may give a reminder (it is said aloud when it fires).
MAX_REMINDER_CHARS = 1_000

# Client to service


class GetTasks(Wire):
    type: Literal["tasks"] = "tasks"


class Delegate(Wire):
    """Hand a goal to a sub-agent (``brain ask --delegate``), as the master agent would."""

    type: Literal["delegate"] = "delegate"
    ref: str
    goal: ClientText


class GetTask(Wire):
    """One task as it now stands (also one too old to be listed in ``tasks``)."""

    type: Literal["task"] = "task"
    ref: str
    id: str


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


class GetDayPlan(Wire):
    """Today's plan as the planner keeps it: its chunks, in time order."""

    type: Literal["day_plan"] = "day_plan"
    ref: str


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


class GetReminders(Wire):
    """The reminders that have not fired yet, soonest first."""

    type: Literal["reminders"] = "reminders"
    ref: str


class AddReminder(Wire):
    """Set a reminder, as the agent's ``set_reminder`` does (``source``: who set it, e.g.
    ``mcp:<client name>``)."""

    type: Literal["add_reminder"] = "add_reminder"
    ref: str
    text: ClientText = Field(max_length=MAX_REMINDER_CHARS)
    # As the user would say it: "in 10 minutes", "tomorrow at 9", "19:00", an ISO time.
    when: ClientText = Field(max_length=MAX_REMINDER_CHARS)
    source: str = "user"


class Tick(Wire):
    """Make the heartbeat tick now."""

    type: Literal["tick"] = "tick"


TaskRequest = (
    GetTasks
    | GetTask
    | Delegate
    | CancelTask
    | ResumeTask
    | AnswerApproval
    | PlanDay
    | GetDayPlan
    | GetOldPlans
    | ClearOldPlans
    | GetIntentions
    | EditIntention
    | SettleIntention
    | GetReminders
    | AddReminder
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


class PlanRow(Wire):
    id: str
    text: str
    start: datetime
    end: datetime
    # The chunk it was broken out of (None: a broad chunk, or the user's own plan).
    parent: str | None
    by_user: bool


class DayPlan(Answer):
    """The answer to ``day_plan``: today's plan chunks, in time order."""

    type: Literal["day_plan"] = "day_plan"
    rows: list[PlanRow]


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


class ReminderRow(Wire):
    id: str
    text: str
    due_at: datetime
    # Who set it: "agent", "user", "subagent:<task id>", "mcp:<client name>".
    source: str


class Reminders(Answer):
    """The answer to a reminder request: the reminders not fired yet, soonest first, and
    what was done, in words (empty for a listing)."""

    type: Literal["reminders"] = "reminders"
    rows: list[ReminderRow]
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


TaskAnswer = TaskAccepted | PlanDone | DayPlan | OldPlans | Intentions | Reminders
TaskUpdate = TaskAnswer | Tasks | ReminderFired | ApprovalAsked | ApprovalSettled
