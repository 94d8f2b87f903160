"""The tools the agent has at a heartbeat besides a word to the user and a background task:
keep an intention for later, have today's plan revised, or stay quiet. Offered at heartbeats
only (in a turn with the user, "stay quiet" would be a way not to answer)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime

from pydantic import Field

from assistant.agent.tools import Arguments, Stores, Tool
from assistant.proactive.intentions import IntentionStore
from assistant.tasks.reminders import reminder_time, spoken_time

# A goal that is a word with the user, not work: offered a background task at a heartbeat, the
# 1.5B model delegated a follow-up question meant for the user.
_TALKS_TO_THE_USER = re.compile(
    r"^\s*(?:ask|tell|remind|check with|let .* know|say|wish|congratulate|greet)\b|"
    r"\b(?:the user|them|him|her)\s+(?:how|whether|if|about)\b",
    re.IGNORECASE,
)


class SetIntention(Arguments):
    text: str = Field(
        description="What you mean to do then, for yourself: 'Ask how Hendrika's audition went'."
    )
    when: str = Field(description="When: 'tomorrow at 10', 'Sunday evening', an ISO time.")


class ReviseDayPlan(Arguments):
    reason: str = Field(description="What changed that today's plan should take in.")


class StartTask(Arguments):
    goal: str = Field(
        description="Work for a background worker with the user's memories, complete in "
        "itself (it cannot talk to the user): 'Gather what the user said about the roof "
        "repairs into a note'."
    )


class StayQuiet(Arguments):
    reason: str = Field(description="Why nothing needs doing now, in a few words.")


def heartbeat_tools(
    intentions: IntentionStore,
    clock: Callable[[], datetime],
    replan: Callable[[str], None] = lambda reason: None,
    delegate: Callable[[str], object] | None = None,
) -> tuple[Tool, ...]:
    """``replan``: have the rest of today's plan revised for a reason (in the background);
    ``delegate``: start a background task (None: none is offered)."""

    def intend(_: Stores, arguments: SetIntention) -> str:
        now = clock()
        due = reminder_time(arguments.when, now)
        if due <= now:
            raise ValueError(f"{arguments.when!r} is not in the future")
        intention = intentions.add(arguments.text, due)
        return f"kept for {spoken_time(due, now)}: {intention.text} ({intention.id})"

    def stay_quiet(_: Stores, arguments: StayQuiet) -> str:
        return "nothing done"

    def start(_: Stores, arguments: StartTask) -> str:
        if _TALKS_TO_THE_USER.search(arguments.goal):
            raise ValueError(
                "a background worker cannot talk to the user: keep an intention to ask them "
                "(set_intention) or stay quiet"
            )
        assert delegate is not None
        delegate(arguments.goal)
        return "started in the background; you are told when it ends"

    def revise(_: Stores, arguments: ReviseDayPlan) -> str:
        replan(arguments.reason)
        return "the rest of today's plan will be revised"

    task = Tool(
        "start_background_task",
        "Start work that needs no one (gathering notes, looking through memories) for the "
        "user to have when they come back.",
        StartTask,
        start,
        tick_only=True,
    )
    return (*((task,) if delegate is not None else ()), *_own(intend, revise, stay_quiet))


def _own(
    intend: Callable[[Stores, SetIntention], str],
    revise: Callable[[Stores, ReviseDayPlan], str],
    stay_quiet: Callable[[Stores, StayQuiet], str],
) -> tuple[Tool, ...]:
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
