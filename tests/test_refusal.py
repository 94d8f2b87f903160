"""A reply that opens by refusing is held back and asked for once more
(agent/checks/opening.py); one that goes round in a loop is stopped (agent/checks/loops.py)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator

import pytest

from assistant.agent import step
from assistant.agent.agent import Agent
from assistant.agent.checks.check import Check, Seen, Verdict
from assistant.agent.checks.loops import LoopStop
from assistant.agent.checks.opening import OpeningGuard, willing_pattern
from assistant.agent.checks.pipeline import ReplyChecks
from assistant.agent.checks.recent import RecentReplies
from assistant.agent.context import ContextConfig, ContextWindow
from assistant.agent.events import UserText
from assistant.agent.instructions import instructions
from assistant.agent.reply_form import ReplyForm
from assistant.agent.step import REASKS
from assistant.agent.tools import Stores
from assistant.agent.turn import FALLBACK_MESSAGE, AgentConfig
from assistant.llm.cancellable import cancellable
from tests.agent_helpers import ScriptedStream, say

REFUSAL = "I'm sorry, but I can't assist with that."
STORY = "Once upon a time, a ferryman named Ada rowed travellers to Gull Rock."


def streamed(guard: OpeningGuard, text: str, chunk: int = 3) -> str:
    shown = "".join(guard.feed(text[i : i + chunk]) for i in range(0, len(text), chunk))
    return shown + guard.flush()


def test_a_refusal_is_never_shown() -> None:
    for refusal in (REFUSAL, "Sorry, I can\u2019t help with that.", "I'm unable to do that."):
        guard = OpeningGuard()
        assert streamed(guard, refusal) == "" and guard.refused, refusal


def test_what_only_starts_like_a_refusal_is_shown_whole_and_soon() -> None:
    for reply in ("I'm sorry to hear that.", "I can't wait to hear it!", "I'm sorry.", "Yes."):
        guard = OpeningGuard()
        assert streamed(guard, reply) == reply and not guard.refused
    guard = OpeningGuard()
    assert guard.feed("I'm sorry") == ""
    assert guard.feed(" to hear") == "I'm sorry to hear", "released the moment it parts"
    assert guard.feed(" that.") == " that."


def test_a_guard_not_armed_lets_everything_through() -> None:
    guard = OpeningGuard(armed=False)
    assert guard.feed(REFUSAL) == REFUSAL and not guard.refused


def agent(llm: ScriptedStream, stores: Stores) -> Agent:
    context = ContextWindow(instructions(), stores.core, ContextConfig(window_tokens=4096))
    return Agent(llm, stores, context, AgentConfig())


def test_a_refused_request_is_asked_once_more_and_the_answer_stands(stores: Stores) -> None:
    llm = ScriptedStream(say(REFUSAL), say(STORY))
    pieces: list[str] = []
    turn = agent(llm, stores).respond(
        UserText("Tell me a story about a ferryman."), on_text=pieces.append
    )
    assert turn.reply == STORY == "".join(pieces), "the refusal was neither shown nor kept"
    assert len(llm.calls) == 2 and llm.calls[1] == llm.calls[0], "asked again, as it was"
    [first, again] = llm.schemas
    assert first is not None and again is not None
    assert willing_pattern() not in json.dumps(first)
    [message] = [shape["properties"]["message"] for shape in again["anyOf"]]
    assert message["pattern"] == willing_pattern(), "held to open willingly"
    assert re.match(willing_pattern(), STORY) and not re.match(willing_pattern(), REFUSAL)
    assert not turn.errors


def test_a_second_refusal_stands(stores: Stores) -> None:
    llm = ScriptedStream(say(REFUSAL), say("I can't help with that: it would hurt someone."))
    pieces: list[str] = []
    turn = agent(llm, stores).respond(UserText("Help me hurt someone."), on_text=pieces.append)
    assert turn.reply == "I can't help with that: it would hurt someone." == "".join(pieces)
    assert len(llm.calls) == 2


def test_a_reader_that_stops_reading_stops_the_stream() -> None:
    closed = threading.Event()

    def endless() -> Iterator[int]:
        try:
            count = 0
            while True:
                count += 1
                yield count
        finally:
            closed.set()

    pieces = cancellable(endless(), threading.Event())
    assert next(pieces) == 1
    pieces.close()
    assert closed.wait(2), "the helper closed the stream at its next piece"


def fed(loop: LoopStop, text: str, chunk: int = 3) -> str:
    shown = "".join(loop.feed(text[i : i + chunk]) for i in range(0, len(text), chunk))
    return shown + loop.flush()


def test_a_sentence_said_again_is_dropped_and_the_third_time_is_a_loop() -> None:
    loop = LoopStop()
    first = "I am so sorry. It must be hard. "
    assert fed(loop, first) == first and not loop.dropped
    assert loop.feed("I am so  SORRY. ") == "" and loop.dropped and not loop.looping
    assert loop.feed("It must be hard for you. ") == "It must be hard for you. "
    assert loop.feed("I am so") == "", "held while it could be the same again"
    assert loop.feed(" sorry. ") == "" and loop.looping


def test_a_run_of_words_going_round_inside_a_sentence_is_stopped() -> None:
    listing = "Take a map, a warm coat, a torch, a warm coat, a torch, a warm coat, a torch"
    loop = LoopStop()
    shown = fed(loop, listing + ", a warm coat, a torch" * 30)
    assert loop.looping and loop.verdict.name == "STOP"
    assert shown.startswith("Take a map, a warm coat, a torch, a warm coat")
    assert len(shown) < len(listing) + 10, "stopped as the run came round again"
    counted = LoopStop()
    fed(
        counted,
        "Names for a goat:\n1. Moss\n2. Moss Moss\n3. Moss Moss Moss\n4. Moss Moss Moss Moss",
    )
    assert counted.looping, "one word four times in a row"


def test_words_and_runs_said_again_not_straight_after_themselves_are_not_a_loop() -> None:
    for text in (
        "It was very, very, very cold. The train was late, so late that we walked.",
        "Bring a hat, a scarf, gloves and a hat for the child. Yes, yes. No, no, no.",
        "Pack light: two shirts, two socks, two books. Then pack the car and drive.",
        "Row, row, row your boat gently down the stream, merrily, merrily, merrily.",
    ):
        loop = LoopStop()
        assert fed(loop, text) == text and not loop.looping, text


def test_a_sentence_that_only_begins_like_one_said_is_shown_whole_as_it_parts() -> None:
    loop = LoopStop()
    loop.feed("She is a vet in Parma. ")
    assert loop.feed("She is a") == ""
    assert loop.feed(" doctor too.") == "She is a doctor too."
    assert fed(LoopStop(), "She is a vet. She is a vet") == "She is a vet. She is a vet", (
        "a last sentence cut short is not a whole repeat"
    )
    assert fed(LoopStop(), "She is a vet. She is a vet.") == "She is a vet. "


def test_short_sentences_come_as_often_as_they_are_written() -> None:
    text = "Dr. Lin and Dr. Ruiz will see you. Yes. Yes. Okay, 9 a.m. works; 9 a.m. it is."
    loop = LoopStop()
    assert fed(loop, text) == text and not loop.dropped


def test_a_message_going_round_is_stopped_and_what_was_said_kept(
    stores: Stores, caplog: pytest.LogCaptureFixture
) -> None:
    looping = '{"message": "Welcome, Malin. ' + "I'm so sorry for Lars. " * 40
    llm = ScriptedStream(looping, chunk=5)
    pieces: list[str] = []
    turn = agent(llm, stores).respond(UserText("Hi, I'm Malin."), on_text=pieces.append)
    shown = "".join(pieces).strip()
    assert shown == turn.reply == "Welcome, Malin. I'm so sorry for Lars.", "each sentence once"
    assert "went round in a loop" in caplog.text, "stopped at the third copy"
    assert len(llm.calls) == 1 and not turn.errors


@pytest.mark.parametrize(
    "reply", ["I'm Wendeline, your assistant for today.", "My name is Wendeline! How can I help?"]
)
def test_a_reply_introducing_itself_by_the_user_s_name_is_held_back(reply: str) -> None:
    heard = "Morning! I'm Wendeline and I keep goats."
    seen = Seen(heard, heard, RecentReplies([]), "Name: Wendeline")
    guard = OpeningGuard.for_step(ReplyForm(), seen)
    assert streamed(guard, reply) == "" and guard.refused
    assert guard.reasked(ReplyForm()).willing
    fine = "I'm glad to meet you, Wendeline."
    assert streamed(OpeningGuard.for_step(ReplyForm(), seen), fine) == fine


class AlwaysAsking(Check):
    """A check that asks for every try again, as two checks asking back and forth would."""

    name = "always"

    @classmethod
    def for_step(cls, form: ReplyForm, seen: Seen) -> AlwaysAsking:
        return cls()

    def feed(self, piece: str) -> str:
        return ""

    def flush(self) -> str:
        return ""

    @property
    def verdict(self) -> Verdict:
        return Verdict.REASK


def test_a_reply_asked_again_and_again_ends_in_one_plain_line(
    stores: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No chain of re-asks keeps the user waiting: after ``REASKS`` the step says it could
    not reply."""
    monkeypatch.setattr(
        step.ReplyChecks, "for_step", classmethod(lambda *_: ReplyChecks([AlwaysAsking()]))
    )
    llm = ScriptedStream(*[say("A lighthouse cat named Pim.")] * (REASKS + 3))
    turn = agent(llm, stores).respond(UserText("Tell me a story about a lighthouse cat."))
    assert turn.reply == FALLBACK_MESSAGE
    assert len(llm.calls) == REASKS + 1
