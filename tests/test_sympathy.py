"""The tone of a reply's opening (agent/tone.py, agent/checks/opening.py): sympathy only where
the user's words tell of trouble, no cheer where they do, no news celebrated for a plain fact.
A reply that opens in the wrong tone is held back like a refusal and asked for once more, held
to the willing openings of the tone."""

from __future__ import annotations

import json
import re

import pytest

from assistant.agent.agent import Agent
from assistant.agent.checks.check import Seen, Verdict
from assistant.agent.checks.opening import OpeningGuard, willing_openings, willing_pattern
from assistant.agent.checks.recent import RecentReplies
from assistant.agent.context import ContextConfig, ContextWindow
from assistant.agent.events import UserText
from assistant.agent.instructions import instructions
from assistant.agent.reply_form import ReplyForm
from assistant.agent.tone import (
    CHEER_OPENINGS,
    NEWS_CHEERS,
    SYMPATHY_OPENINGS,
    Tone,
    sympathy_due,
    tone_of,
    unwanted_openings,
)
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
    "The mechanic says the van needs a new gearbox.",
    "The dishwasher stopped working last night.",
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
GOOD = (
    "I passed my driving test this morning!",
    "Big news: Hana and I got engaged.",
    "My daughter was born on Friday, we're so happy.",
    "They finally offered me the new job.",
)


@pytest.mark.parametrize("words", TROUBLE)
def test_trouble_is_seen_and_wants_no_cheer(words: str) -> None:
    assert sympathy_due(words) and unwanted_openings(tone_of(words)) == CHEER_OPENINGS


@pytest.mark.parametrize("words", NO_TROUBLE)
def test_news_without_trouble_wants_no_condolences(words: str) -> None:
    assert not sympathy_due(words) and set(SYMPATHY_OPENINGS) <= set(
        unwanted_openings(tone_of(words))
    )


@pytest.mark.parametrize(
    "words",
    ("I'm vegetarian.", "My brother Jules works as an electrician in Ghent.", "I have a meeting."),
)
def test_a_plain_fact_is_not_celebrated(words: str) -> None:
    assert tone_of(words) is Tone.PLAIN
    assert unwanted_openings(tone_of(words)) == SYMPATHY_OPENINGS + NEWS_CHEERS


@pytest.mark.parametrize("words", GOOD)
def test_good_news_may_be_celebrated(words: str) -> None:
    assert tone_of(words) is Tone.GOOD and unwanted_openings(tone_of(words)) == SYMPATHY_OPENINGS


def test_words_of_both_hold_neither_back() -> None:
    words = "Good news and bad news: I got the job, but my dog died."
    assert tone_of(words) is Tone.MIXED and unwanted_openings(tone_of(words)) == ()


@pytest.mark.parametrize(
    "words",
    (
        "Bad news, the roof repair finally gave way in the storm.",
        "Sad news: I wasn't promoted after all.",
        "Great, the washing machine flooded the hall again.",
        "Finally heard back from the clinic, and it's not good.",
    ),
)
def test_gladness_said_of_trouble_is_trouble(words: str) -> None:
    assert tone_of(words) is Tone.TROUBLE and unwanted_openings(tone_of(words)) == CHEER_OPENINGS


@pytest.mark.parametrize(
    "words",
    ("The knee surgery went well, I'm back home.", "Good news: Lior's fever is gone."),
)
def test_trouble_that_ended_well_holds_neither_back(words: str) -> None:
    assert tone_of(words) is Tone.MIXED


def test_a_copy_kept_in_the_second_person_still_avoids_its_first_person_opening() -> None:
    avoiding = ("you're sorry to hear that your day was hard.",)
    assert "I'm sorry to hear" not in willing_openings(avoiding, Tone.TROUBLE)
    assert "Sorry to hear" in willing_openings(avoiding, Tone.TROUBLE)


def test_the_willing_openings_follow_the_tone() -> None:
    trouble = willing_openings(tone=Tone.TROUBLE)
    assert "I'm sorry to hear" in trouble and "Oh no" in trouble
    assert not {"Great", "Good", "Congratulations", "That", "Sure"} & set(trouble)
    assert {"Great", "Congratulations"} <= set(willing_openings(tone=Tone.GOOD))
    plain = willing_openings()
    assert not {"Great", "Good", "Congratulations", "I'm sorry to hear"} & set(plain)
    assert re.match(willing_pattern(tone=Tone.TROUBLE), "Oh no, that sounds awful.")
    assert not re.match(willing_pattern(tone=Tone.TROUBLE), "That's great! The shop closed.")


def test_the_guard_holds_cheer_for_trouble() -> None:
    guard = OpeningGuard(unwanted=unwanted_openings(tone_of("My van broke down on the motorway.")))
    assert guard.feed("Good news! Your van broke down.") == "" and guard.refused
    guard = OpeningGuard(unwanted=unwanted_openings(tone_of("My van broke down on the motorway.")))
    reply = "Oh no, that's a rough start to the day."
    assert guard.feed(reply) + guard.flush() == reply and not guard.refused
    guard = OpeningGuard(unwanted=unwanted_openings(tone_of("My brother is a plumber in Leeds.")))
    assert guard.feed("Good news! Your brother is a plumber.") == "" and guard.refused


def test_no_words_of_the_user_no_rule() -> None:
    """A heartbeat's step answers no words of the user: no tone holds its opening back."""
    seen = Seen(heard="", prompt="", recent=RecentReplies(), human="")
    guard = OpeningGuard.for_step(ReplyForm(tick=True), seen)
    reply = "Oh no, the boiler service is overdue."
    assert guard.feed(reply) + guard.flush() == reply and guard.verdict is Verdict.PASS


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


def test_cheer_for_trouble_is_asked_again_in_its_tone(stores: Stores) -> None:
    context = ContextWindow(instructions(), stores.core, ContextConfig(window_tokens=4096))
    llm = ScriptedStream(
        say("Great! Your boiler broke down again."),
        say("Oh no, a cold house is miserable. I hope the repair is quick."),
    )
    turn = Agent(llm, stores, context, AgentConfig()).respond(
        UserText("The boiler broke down again, no hot water all day.")
    )
    assert turn.reply == "Oh no, a cold house is miserable. I hope the repair is quick."
    assert len(llm.calls) == 2
    held = json.dumps(llm.schemas[1]) + str(llm.grammars[1])
    assert "I'm sorry to hear" in held and "Great" not in held, "held to openings of sympathy"


def test_news_announced_for_a_plain_fact_is_not_reopened_with_its_word(stores: Stores) -> None:
    """Held to the tone on the first try alone, the re-ask opened "That" and went on "That's
    great news!" again: the opening it had is avoided, its first word too."""
    context = ContextWindow(instructions(), stores.core, ContextConfig(window_tokens=4096))
    llm = ScriptedStream(
        say("That's great news! A new city is exciting."),
        say("Noted: your aunt lives in Tampere now."),
    )
    turn = Agent(llm, stores, context, AgentConfig()).respond(
        UserText("My aunt moved from Oulu to Tampere.")
    )
    assert turn.reply == "Noted: your aunt lives in Tampere now." and len(llm.calls) == 2
    held = json.dumps(llm.schemas[1]) + str(llm.grammars[1])
    assert "Noted" in held and '"That' not in held and "|That" not in held
