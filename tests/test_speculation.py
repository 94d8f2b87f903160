"""A reply asked for at the user's pause (``Agent.speculate``): taken over by the turn that
sends the same request, dropped for any other. Real stores; a scripted model for the control
flow, then the real local server."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from assistant.agent.events import UserUtterance
from assistant.agent.speculation import Request, Speculation
from assistant.agent.tools import Stores
from assistant.llm.client import LLMClient, LLMUnavailable
from assistant.llm.messages import StreamDelta, TextDelta
from tests.agent_helpers import ScriptedStream, agent_on, say, turn_under_way

QUESTION = "Where does my sister Brigida live?"


@pytest.fixture
def stores(stores: Stores) -> Stores:
    """The shared stores, with what the questions are about."""
    for text in ["User: My sister Brigida lives in Parma.", "User: I drive a blue Fiat."]:
        stores.stream.add(text, importance=6)
    return stores


def heard(text: str) -> UserUtterance:
    return UserUtterance(text, confidence=0.9)


def test_the_turn_takes_over_the_reply_asked_for_at_the_pause(stores: Stores) -> None:
    model = ScriptedStream(say("In Parma."), say("Something else."))
    agent = agent_on(model, stores)
    assert agent.speculate(QUESTION)
    before = list(agent.context.fifo)
    pieces: list[str] = []
    turn = agent.respond(heard(QUESTION), on_text=pieces.append)
    assert turn.reply == "In Parma." and "".join(pieces) == "In Parma."
    assert len(model.calls) == 1, "the turn sent nothing of its own"
    assert model.calls[0][-1] == {"role": "user", "content": QUESTION}
    assert agent.speculated.taken == 1 and agent.speculated.dropped == 0
    assert before == [], "speculating wrote nothing into the window"
    assert {"role": "user", "content": QUESTION} in agent.context.fifo, "the turn recorded it"


def test_a_speculation_on_words_the_user_then_went_on_from_is_dropped(stores: Stores) -> None:
    model = ScriptedStream(say("Where does who live?"), say("In Parma."))
    agent = agent_on(model, stores)
    assert agent.speculate("Where does my")
    turn = agent.respond(heard(QUESTION))
    assert turn.reply == "In Parma.", "the answer to what was said, not to the pause"
    assert [call[-1]["content"] for call in model.calls] == ["Where does my", QUESTION]
    assert agent.speculated.taken == 0 and agent.speculated.dropped == 1
    memories = [m.record.text for m in stores.stream.retrieve("Where does my", k=10)]
    assert "User: Where does my" not in memories, "nothing of the speculation was recorded"


def test_a_newer_pause_replaces_the_speculation_and_a_busy_turn_refuses_one(
    stores: Stores,
) -> None:
    model = ScriptedStream(say("One."), say("Two."))
    agent = agent_on(model, stores)
    assert agent.speculate("Where does")
    assert agent.speculate(QUESTION)
    assert agent.speculated.dropped == 1
    assert agent.respond(heard(QUESTION)).reply == "Two."
    with turn_under_way(agent):
        assert not agent.speculate(QUESTION), "a turn under way is not disturbed"


def test_reading_a_draft_ahead_drops_the_speculation_before_it(stores: Stores) -> None:
    model = ScriptedStream(say("Where does who live?"), say("In Parma."))
    agent = agent_on(model, stores)
    assert agent.speculate("Where does my")
    assert agent.prepare(QUESTION), "the user went on speaking"
    assert agent.speculated.dropped == 1
    assert agent.respond(heard(QUESTION)).reply == "In Parma."


def test_a_speculation_hands_over_what_was_written_and_then_the_rest() -> None:
    go_on = threading.Event()

    def slow() -> Iterator[StreamDelta]:
        yield TextDelta("In ")
        go_on.wait(10)
        yield TextDelta("Parma.")

    speculation = Speculation(Request.of([{"role": "user", "content": "x"}]), slow)
    pieces = speculation.take()
    assert next(pieces) == TextDelta("In ")
    go_on.set()
    assert list(pieces) == [TextDelta("Parma.")]


def test_a_failed_speculation_fails_the_turn_that_takes_it_and_an_unread_one_stops() -> None:
    def failing() -> Iterator[StreamDelta]:
        yield TextDelta("In ")
        raise LLMUnavailable("the server went away")

    with pytest.raises(LLMUnavailable):
        list(Speculation(Request.of([]), failing).take())

    stopped = threading.Event()

    def endless() -> Iterator[StreamDelta]:
        try:
            while True:
                yield TextDelta("la ")
                time.sleep(0.01)
        finally:
            stopped.set()

    speculation = Speculation(Request.of([]), endless)
    pieces = speculation.take()
    next(pieces)
    pieces.close()  # the turn was cut off
    assert stopped.wait(5), "the stream was closed, so the server stops writing"


@pytest.mark.slow
def test_the_real_server_speculates_and_drops_cleanly(fast_llm: LLMClient, stores: Stores) -> None:
    agent = agent_on(fast_llm, stores)
    agent.respond(heard("Hello, I'm Sid."))
    assert agent.speculate("Where does my")
    time.sleep(0.5)  # the server is writing the reply to the pause when the turn comes
    dropped = agent.respond(heard(QUESTION))
    assert dropped.error is None and dropped.reply, dropped
    assert agent.speculated.dropped == 1
    assert agent.speculate("Thanks. What car do I drive?")
    taken = agent.respond(heard("Thanks. What car do I drive?"))
    assert taken.error is None and taken.reply, taken
    assert agent.speculated.taken == 1


def test_a_pause_while_a_word_is_read_ahead_still_has_its_reply_asked_for(
    stores: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Drafts come from two threads (a word's read ahead, a sentence's speculation): the one
    that comes while the other's memories are retrieved waits for it, and is not lost."""
    model = ScriptedStream(say("In Parma."))
    agent = agent_on(model, stores)
    ranking = threading.Event()
    rank = agent.memories.rank

    def slow_rank(*args: object, **kwargs: object) -> object:
        ranking.set()
        time.sleep(0.3)
        return rank(*args, **kwargs)

    monkeypatch.setattr(agent.memories, "rank", slow_rank)
    word = threading.Thread(target=agent.prepare, args=("Where does my",))
    word.start()
    assert ranking.wait(5)
    assert agent.speculate(QUESTION), "waited for the word's memories, then asked"
    word.join(5)
    assert agent.respond(heard(QUESTION)).reply == "In Parma."
    assert agent.speculated.taken == 1 and len(model.calls) == 1
