"""A message read before it is sent (``Agent.prepare``): a typing pause sends the draft, its
memories are retrieved and the conversation's server reads the prompt the turn would send;
sent unchanged, the turn's prompt is that one, and it reads almost nothing new. Real stores;
a scripted model for control flow, then the real local server."""

from __future__ import annotations

import pytest

from assistant.agent.events import UserText
from assistant.agent.tools import Stores
from assistant.llm.client import LLMClient
from assistant.protocol import Request
from assistant.protocol.conversation import Draft
from tests.agent_helpers import ScriptedStream, agent_on, say, turn_under_way

QUESTION = "Where does my sister Brigida live?"
# A short reply keeps the real-server tests quick.
SHORT_REPLY = 48


@pytest.fixture
def stores(stores: Stores) -> Stores:
    """The shared stores, with what the questions are about."""
    for text in [
        "User: My sister Brigida lives in Parma.",
        "User: I drive a blue Fiat.",
        "User: My dentist appointment is on Friday.",
    ]:
        stores.stream.add(text, importance=6)
    return stores


def test_a_prepared_message_sent_unchanged_sends_the_prompt_read_ahead(stores: Stores) -> None:
    model = ScriptedStream(say("Hi."), say("In Parma."))
    agent = agent_on(model, stores)
    agent.respond(UserText("Hello"))
    before = list(agent.context.fifo)

    assert agent.prepare(QUESTION)
    assert agent.context.fifo == before, "preparing changes nothing in the window"
    read_ahead = model.summaries[-1]  # the scripted model's complete() records its prompts
    assert read_ahead[-1] == {"role": "user", "content": QUESTION}
    assert "Brigida lives in Parma" in read_ahead[-2]["content"]

    turn = agent.respond(UserText(QUESTION))
    assert turn.reply == "In Parma."
    assert model.calls[-1] == read_ahead, "the turn's prompt is the one the server read"


def test_a_different_message_still_shows_its_own_best_memories(stores: Stores) -> None:
    model = ScriptedStream(say("Noted."))
    agent = agent_on(model, stores)
    assert agent.prepare("What colour is my car")
    turn = agent.respond(UserText(QUESTION))
    assert turn.reply == "Noted."
    prompt = model.calls[-1]
    assert prompt[-1] == {"role": "user", "content": QUESTION}
    assert "Brigida lives in Parma" in prompt[-2]["content"], "retrieved for what was sent"


def test_the_next_draft_keeps_the_memories_read_with_the_last_at_the_head(
    stores: Stores,
) -> None:
    """One more word must not reorder what the server has read: the memories of the draft
    before stay first, in the same order, and the new best ones follow them."""
    model = ScriptedStream(say("In Parma."))
    agent = agent_on(model, stores)
    assert agent.prepare("What colour is my")
    first = model.summaries[-1][-2]["content"]
    assert agent.prepare("What colour is my sister Brigida's car? Where does she live?")
    second = model.summaries[-1][-2]["content"]
    assert second.startswith(first), "the earlier memories lead, byte for byte"
    assert "Brigida lives in Parma" in second, "the new best memory is added after them"
    agent.respond(UserText("What colour is my sister Brigida's car? Where does she live?"))
    assert model.calls[-1][-2]["content"] == second, "sent as drafted: the same memories"


def test_preparing_waits_for_no_turn_and_disturbs_none(stores: Stores) -> None:
    agent = agent_on(ScriptedStream(say("Ok.")), stores)
    with turn_under_way(agent):
        assert not agent.prepare(QUESTION), "a turn under way: nothing is read ahead"
    assert not agent.prepare("   "), "nothing typed: nothing to read"


def test_a_draft_is_a_request_of_the_protocol() -> None:
    from pydantic import TypeAdapter

    parsed = TypeAdapter(Request).validate_json('{"type": "draft", "text": "Where is"}')
    assert parsed == Draft(text="Where is")


@pytest.mark.slow
def test_the_real_server_reads_almost_nothing_for_a_prepared_message(
    fast_llm: LLMClient, stores: Stores
) -> None:
    agent = agent_on(fast_llm, stores, reply_tokens=SHORT_REPLY)
    agent.respond(UserText("Hello, I'm Sid."))
    assert agent.prepare(QUESTION)
    turn = agent.respond(UserText(QUESTION))
    reading = fast_llm.last_reading
    assert turn.error is None and turn.reply
    assert reading is not None and reading.read < 10, reading


@pytest.mark.slow
def test_the_real_server_reads_only_the_new_words_of_a_longer_draft(
    fast_llm: LLMClient, stores: Stores
) -> None:
    agent = agent_on(fast_llm, stores, reply_tokens=SHORT_REPLY)
    agent.respond(UserText("Hello, I'm Sid."))
    assert agent.prepare("Where does my sister")
    assert agent.prepare(QUESTION)
    reading = fast_llm.last_reading
    assert reading is not None and reading.read < 40, reading
