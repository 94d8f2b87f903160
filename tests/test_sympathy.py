"""Sympathy only where the user's words tell of trouble (agent/checks/opening.py): a reply to plain
news that opens with condolences is held back like a refusal and asked for once more."""

from __future__ import annotations

import pytest

from assistant.agent.agent import Agent
from assistant.agent.checks.opening import (
    SYMPATHY_OPENINGS,
    OpeningGuard,
    sympathy_due,
    unwanted_openings,
)
from assistant.agent.context import ContextConfig, ContextWindow
from assistant.agent.events import UserText
from assistant.agent.instructions import instructions
from assistant.agent.tools import Stores
from assistant.agent.turn import AgentConfig
from tests.agent_helpers import ScriptedStream, say

# Not the benchmark's probes: written for this test.
TROUBLE = (
    "My cat is sick and won't eat.",
    "I didn't get the job, they rejected me.",
    "Our flight got cancelled and we're stuck in Lugano.",
    "I'm so stressed about the move.",
    "Grandpa passed away on Monday.",
    "Someone stole my bike. It was stolen from outside the gym.",
    "I had a really bad day at work.",
    "My phone fell in the bath and it\u2019s broken.",
)
NO_TROUBLE = (
    "I'm starting a woodwork class on Tuesdays.",
    "Nina's wedding is on the 21st of June.",
    "We're painting the kitchen blue this weekend.",
    "My brother Jules works as an electrician in Ghent.",
    "I have a meeting with the bank at 11.",
    "I'm vegetarian.",
    "The gas man is coming tomorrow between 8 and 12.",
)


@pytest.mark.parametrize("words", TROUBLE)
def test_trouble_is_seen(words: str) -> None:
    assert sympathy_due(words) and unwanted_openings(words) == ()


@pytest.mark.parametrize("words", NO_TROUBLE)
def test_plain_news_wants_no_condolences(words: str) -> None:
    assert not sympathy_due(words) and unwanted_openings(words) == SYMPATHY_OPENINGS


def test_no_words_of_the_user_no_rule() -> None:
    assert unwanted_openings("") == ()


def test_the_guard_holds_sympathy_back_only_when_told() -> None:
    reply = "I'm sorry to hear that your meeting is at 11."
    guard = OpeningGuard(unwanted=SYMPATHY_OPENINGS)
    assert guard.feed(reply) == "" and guard.refused
    guard = OpeningGuard()
    assert guard.feed(reply) == reply and not guard.refused
    guard = OpeningGuard(unwanted=SYMPATHY_OPENINGS)
    assert guard.feed("I'm sorry") == ""
    assert guard.feed(", I misread that.") == "I'm sorry, I misread that.", "an apology passes"
    guard = OpeningGuard(unwanted=SYMPATHY_OPENINGS)
    assert guard.feed("I'm sorry about the change to your appointment.") == "" and guard.refused


def test_condolences_for_plain_news_are_asked_again(stores: Stores) -> None:
    context = ContextWindow(instructions(), stores.core, ContextConfig(window_tokens=4096))
    llm = ScriptedStream(
        say("I'm sorry to hear that your haircut moved."),
        say("Okay, Wednesday morning it is."),
    )
    pieces: list[str] = []
    turn = Agent(llm, stores, context, AgentConfig()).respond(
        UserText("My haircut moved to Wednesday morning."), on_text=pieces.append
    )
    assert turn.reply == "Okay, Wednesday morning it is." == "".join(pieces)
    assert len(llm.calls) == 2


def test_condolences_for_trouble_stand(stores: Stores) -> None:
    context = ContextWindow(instructions(), stores.core, ContextConfig(window_tokens=4096))
    llm = ScriptedStream(say("I'm sorry to hear that. I hope Pippin's pain eases."))
    turn = Agent(llm, stores, context, AgentConfig()).respond(
        UserText("My dog Pippin hurt her paw.")
    )
    assert turn.reply.startswith("I'm sorry to hear that.") and len(llm.calls) == 1
