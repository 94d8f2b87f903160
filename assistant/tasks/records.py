"""What is kept about a delegated task: its goal, its plan (Ariadne style: the main goal and
sub-goals, each with a reason and a status, revised after every step), the steps taken, the
result and what it cost. One record per task, saved after every change."""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from memory.records import utc_now

TaskStatus = Literal["queued", "running", "waiting", "done", "failed", "cancelled"]
FINISHED: tuple[TaskStatus, ...] = ("done", "failed", "cancelled")
SubGoalStatus = Literal["todo", "doing", "done", "dropped"]


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SubGoal(Model):
    goal: str
    reason: str = Field(description="Why this sub-goal serves the main goal.")
    status: SubGoalStatus = "todo"


class TaskStep(Model):
    number: int
    tool: str
    arguments: dict[str, Any]
    result: str
    failed: bool = False
    at: datetime = Field(default_factory=utc_now)


class ApprovalRequest(Model):
    """A tool call that acts outside the memory store, put to the user before it runs."""

    id: str
    tool: str
    arguments: dict[str, Any]
    # What the user is asked, in words (the tool, what it does, its arguments).
    question: str
    asked_at: datetime = Field(default_factory=utc_now)


class TaskCost(Model):
    """What the task has used so far. Tokens are estimated from the text sent and received
    (streamed replies carry no usage counts); seconds are wall-clock time while running."""

    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class TaskRecord(Model):
    id: str
    goal: str
    status: TaskStatus = "queued"
    created_at: datetime = Field(default_factory=utc_now)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    # Who asked for it: "agent" (the master agent's delegate_task) or a client's name.
    requested_by: str = "agent"
    plan: list[SubGoal] = Field(default_factory=list)
    steps: list[TaskStep] = Field(default_factory=list)
    current_step: str = ""
    result: str | None = None
    # Why it failed or was cancelled, in one line.
    reason: str | None = None
    # A task stopped by a restart that can be run again from its goal.
    resumable: bool = False
    cost: TaskCost = Field(default_factory=TaskCost)
    # The master agent has been told that it finished.
    reported: bool = False
    # Set while the task waits for the user to allow a tool call.
    waiting_for: ApprovalRequest | None = None

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    def elapsed_s(self, now: datetime | None = None) -> float:
        if self.started_at is None:
            return 0.0
        end = self.ended_at or now or utc_now()
        return max(0.0, (end - self.started_at).total_seconds())

    def summary(self) -> str:
        """One paragraph for the master agent when the task ends."""
        if self.status == "done":
            outcome = f"done: {self.result or '(no result)'}"
        elif self.status == "cancelled":
            outcome = f"cancelled ({self.reason or 'no reason given'})"
        else:
            outcome = f"failed: {self.reason or 'no reason given'}"
        return (
            f'"{self.goal}" {outcome} ({len(self.steps)} steps, {self.cost.llm_calls} LLM '
            f"calls, {self.elapsed_s():.0f} s)"
        )


def new_task_id() -> str:
    return "t-" + secrets.token_hex(3)


def new_approval_id() -> str:
    return "a-" + secrets.token_hex(3)
