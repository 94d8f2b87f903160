"""A sub-agent's plan, Ariadne style: the main goal broken into sub-goals, each with a reason
and a status, revised after every step.

The model writes the sub-goals once, in its first step. Every later step opens with its verdict
on the sub-goal in hand, given the result it has just read ("done", "not yet", "cannot"), and
the statuses follow from that verdict. A small local model asked to rewrite the whole plan
every step copies it unchanged and never moves on (measured with the bundled 0.5B and 1.5B
models: they searched again and again); asked one question about one sub-goal, it answers it.

The verdict also shapes the grammar of the step: when the last open sub-goal is done, the only
tools left are ``finish`` and ``give_up``, so a finished plan ends the task.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, get_args

from pydantic import BaseModel, Field

from assistant.agent.tools import Tool
from assistant.tasks.records import SubGoal

PLAN_ITEMS = 5
PLAN_CHARS = 120

Progress = Literal["done", "not yet", "cannot"]
PROGRESS: tuple[Progress, ...] = get_args(Progress)


class PlannedGoal(BaseModel):
    goal: str = Field(max_length=PLAN_CHARS)
    reason: str = Field(max_length=PLAN_CHARS)


class FirstPlan(BaseModel):
    plan: list[PlannedGoal] = Field(min_length=1, max_length=PLAN_ITEMS)


class Verdict(BaseModel):
    progress: Progress


def first_plan(planned: Sequence[PlannedGoal]) -> list[SubGoal]:
    """The model's sub-goals, the first of them in hand."""
    return [
        SubGoal(goal=g.goal, reason=g.reason, status="doing" if number == 0 else "todo")
        for number, g in enumerate(planned)
    ]


def current(plan: Sequence[SubGoal]) -> int | None:
    """The index of the sub-goal in hand: the one being done, else the first still to do."""
    for wanted in ("doing", "todo"):
        for index, goal in enumerate(plan):
            if goal.status == wanted:
                return index
    return None


def open_goals(plan: Sequence[SubGoal]) -> int:
    return sum(g.status in ("doing", "todo") for g in plan)


def revised(plan: Sequence[SubGoal], progress: Progress) -> list[SubGoal]:
    """The plan after the model's verdict on the sub-goal in hand; the next one is taken up
    when it is done or cannot be done."""
    statuses = [g.status for g in plan]
    index = current(plan)
    if index is not None:
        if progress == "not yet":
            statuses[index] = "doing"
        else:
            statuses[index] = "done" if progress == "done" else "dropped"
            following = next((i for i, s in enumerate(statuses) if s == "todo"), None)
            if following is not None:
                statuses[following] = "doing"
    return [g.model_copy(update={"status": s}) for g, s in zip(plan, statuses, strict=True)]


def finished(plan: Sequence[SubGoal]) -> bool:
    return bool(plan) and open_goals(plan) == 0


def describe(plan: Sequence[SubGoal]) -> str:
    """The plan as the model reads it at the start of a step, the sub-goal in hand marked."""
    index = current(plan)
    lines = [
        f"{number}. [{g.status}] {g.goal} (why: {g.reason})"
        + ("  <- in hand" if number - 1 == index else "")
        for number, g in enumerate(plan, start=1)
    ]
    if index is None:
        ask = "Every sub-goal is settled: call finish with the result (or give_up)."
    else:
        ask = (
            f'First say in "progress" whether the last result finished sub-goal {index + 1} '
            '("done"), not yet ("not yet"), or showed it cannot be done ("cannot"). Then call '
            "the tool for the sub-goal in hand after that: the next one if this one is settled"
            + ("; this is the last one, so settled means finish." if open_goals(plan) == 1 else ".")
        )
    return "Your plan:\n" + "\n".join(lines) + "\n" + ask


def step_schema(tools: Sequence[Tool], plan: Sequence[SubGoal]) -> dict[str, Any]:
    """One step, as a JSON schema. Before there is a plan: the plan, then one call. After: the
    verdict on the sub-goal in hand, then one call; a verdict that settles the last open
    sub-goal allows only the ending tools."""
    if not plan:
        return _branches(tools, "plan", lambda tool: _plan_schema())
    ending = [t.name for t in tools if t.name in ("finish", "give_up")]
    last = open_goals(plan) <= 1

    def verdicts(tool: Tool) -> dict[str, Any]:
        allowed = PROGRESS if tool.name in ending or not last else ("not yet",)
        return {"enum": list(allowed)}

    return _branches(tools, "progress", verdicts)


def _branches(tools: Sequence[Tool], key: str, first: Any) -> dict[str, Any]:
    return {
        "anyOf": [
            {
                "type": "object",
                "properties": {
                    key: first(tool),
                    "tool": {"const": tool.name},
                    "arguments": tool.schema(),
                },
                "required": [key, "tool", "arguments"],
                "additionalProperties": False,
            }
            for tool in tools
        ]
    }


def _plan_schema() -> dict[str, Any]:
    # Lengths are capped: a small model otherwise writes an essay per reason.
    subgoal = {
        "type": "object",
        "properties": {
            "goal": {"type": "string", "maxLength": PLAN_CHARS},
            "reason": {"type": "string", "maxLength": PLAN_CHARS},
        },
        "required": ["goal", "reason"],
        "additionalProperties": False,
    }
    return {"type": "array", "items": subgoal, "minItems": 1, "maxItems": PLAN_ITEMS}
