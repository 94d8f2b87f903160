"""A reply never opens by copying an earlier one (agent/checks/opening.py, recent.py): held
back like a refusal and asked for once more."""

from __future__ import annotations

from assistant.agent.agent import Agent
from assistant.agent.checks.opening import OpeningGuard
from assistant.agent.checks.recent import RECENT, RecentReplies, opening
from assistant.agent.context import ContextConfig, ContextWindow
from assistant.agent.events import UserText
from assistant.agent.instructions import instructions
from assistant.agent.tools import Stores
from assistant.agent.turn import AgentConfig
from tests.agent_helpers import ScriptedStream, say

JOB = "I'm so happy! A new job, how exciting."
LUTON = "Good for you, Luton is a great city! I'll remember that."


def test_the_first_sentences_of_a_reply_are_its_opening() -> None:
    assert opening(LUTON) == "Good for you, Luton is a great city!"
    assert opening(JOB) == JOB, "'I'm so happy!' alone is too short to tell"
    assert opening("Dr. Ruiz is at 3 p.m. on Friday") == "Dr. Ruiz is at 3 p.m."
    assert opening("No end at all") == "No end at all"
    replies = RecentReplies([LUTON, "Okay.", "Good for you, luton is a  great city!"])
    assert replies.openings() == ("good for you, luton is a great city!",), "one word goes"
    replies = RecentReplies(f"Reply number {n} to you." for n in range(RECENT + 5))
    assert len(replies.openings()) == RECENT and "reply number 0 to you." not in replies.openings()


def test_the_guard_holds_a_copy_and_lets_a_new_reply_through_once_it_parts() -> None:
    openings = RecentReplies([LUTON]).openings()
    guard = OpeningGuard(unwanted=openings)
    assert guard.feed("Good for you, Luton is a great city!") == "" and guard.refused
    guard = OpeningGuard(unwanted=openings)
    assert guard.feed("Good for you") == ""
    assert guard.feed(", Sid!") == "Good for you, Sid!", "released the moment it parts"


def test_a_reply_copying_an_earlier_one_is_asked_again(stores: Stores) -> None:
    context = ContextWindow(instructions(), stores.core, ContextConfig(window_tokens=4096))
    llm = ScriptedStream(
        say(JOB), say(JOB + " Water them weekly."), say("Sure: a list with watering days.")
    )
    agent = Agent(llm, stores, context, AgentConfig())
    assert agent.respond(UserText("I got the job at the studio!")).reply == JOB
    pieces: list[str] = []
    turn = agent.respond(UserText("How do I keep track of houseplants?"), on_text=pieces.append)
    assert turn.reply == "Sure: a list with watering days." == "".join(pieces)
    assert len(llm.calls) == 3, "the copy was neither shown nor kept, and asked again once"


def test_a_reply_opening_with_the_users_own_words_is_asked_again() -> None:
    from assistant.agent.checks.opening import OpeningGuard, echo_of

    heard = "The boiler man is coming on Thursday morning."
    guard = OpeningGuard(unwanted=echo_of(heard))
    assert guard.feed("The boiler man is coming on Thursday morning.") == ""
    assert guard.refused
    fine = OpeningGuard(unwanted=echo_of(heard))
    assert fine.feed("Good, the boiler will be sorted.") + fine.flush() != ""
    assert echo_of("Thanks!") == ()


def test_a_later_sentence_of_an_earlier_reply_is_dropped_but_not_the_first() -> None:
    from assistant.agent.checks.loops import LoopStop
    from assistant.agent.checks.recent import RecentReplies

    earlier = RecentReplies(["Lovely news. What will you plant there next?"]).sentences()
    loop = LoopStop(earlier)
    shown = loop.feed("The roses sound great. What will you plant there next? ") + loop.flush()
    assert shown == "The roses sound great. " and loop.dropped
    first = LoopStop(earlier)
    said = first.feed("What will you plant there next? I'd try tulips.") + first.flush()
    assert said == "What will you plant there next? I'd try tulips."


def test_a_short_reply_is_not_said_again_whole_but_one_word_may_be() -> None:
    from assistant.agent.checks.recent import RecentReplies

    replies = RecentReplies(["See you, Ilse.", "Okay."])
    assert "see you, ilse." in replies.openings()
    assert "okay." not in replies.openings()
