"""The tools the agent has at a heartbeat besides a word to the user and a background task:
keep an intention for later, have today's plan revised, or stay quiet. Offered at heartbeats
only (in a turn with the user, "stay quiet" would be a way not to answer)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from pydantic import Field

from assistant.agent.tools import Arguments, Stores, Tool
from assistant.proactive.intentions import IntentionStore
from assistant.tasks.reminders import reminder_time, spoken_time


class SetIntention(Arguments):
    text: str = Field(
        description="What you mean to do then, for yourself: 'Ask how Marta's recital went'."
    )
    when: str = Field(description="When: 'tomorrow at 10', 'Sunday evening', an ISO time.")


class ReviseDayPlan(Arguments):
    reason: str = Field(description="What changed that today's plan should take in.")


class StayQuiet(Arguments):
    reason: str = Field(description="Why nothing needs doing now, in a few words.")


def heartbeat_tools(
    intentions: IntentionStore,
    clock: Callable[[], datetime],
    replan: Callable[[str], None] = lambda reason: None,
) -> tuple[Tool, ...]:
    """``replan``: have the rest of today's plan revised for a reason (in the background)."""

    def intend(_: Stores, arguments: SetIntention) -> str:
        now = clock()
        due = reminder_time(arguments.when, now)
        if due <= now:
            raise ValueError(f"{arguments.when!r} is not in the future")
        intention = intentions.add(arguments.text, due)
        return f"kept for {spoken_time(due, now)}: {intention.text} ({intention.id})"

    def stay_quiet(_: Stores, arguments: StayQuiet) -> str:
        return "nothing done"

    def revise(_: Stores, arguments: ReviseDayPlan) -> str:
        replan(arguments.reason)
        return "the rest of today's plan will be revised"

    return (
        Tool(
            "set_intention",
            "Keep something to come back to at a time (a follow-up question, a check): the "
            "heartbeat brings it back to you when it is due.",
            SetIntention,
            intend,
            tick_only=True,
        ),
        Tool(
            "revise_day_plan",
            "Have the rest of today's plan revised, when something new changes the day.",
            ReviseDayPlan,
            revise,
            tick_only=True,
        ),
        Tool(
            "stay_quiet",
            "Do nothing now: nothing here needs the user or a task.",
            StayQuiet,
            stay_quiet,
            tick_only=True,
        ),
    )
