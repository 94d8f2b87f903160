"""News about someone the user names is answered with their name (agent/naming.py): found by
code in the words, and held by the grammar of the message."""

from __future__ import annotations

import json
import re

import pytest

from assistant.agent.agent import Agent
from assistant.agent.checks.opening import willing_pattern
from assistant.agent.context import ContextConfig, ContextWindow
from assistant.agent.events import UserText
from assistant.agent.instructions import instructions
from assistant.agent.naming import named_in_news, saying
from assistant.agent.tools import COMPOSED_PATTERN, Stores
from assistant.agent.turn import AgentConfig
from assistant.llm.client import LLMClient
from tests.agent_helpers import ScriptedStream, action, say


def test_the_person_named_in_news_is_found() -> None:
    found = {
        "My sister Aya just started a new job at a bookshop in Parma.": "Aya",
        "Hi, I'm Malin. My brother Lars lives in Valletta and works as a nurse.": "Lars",
        "our neighbour, Gerda, plays trumpet in a brass band": "Gerda",
        "My best friend Jan-Erik moved to Lyon.": "Jan-Erik",
        "My sister-in-law Ela is a vet.": "Ela",
        "My son Lev has swimming lessons every Thursday at four.": "Lev",
    }
    for message, name in found.items():
        assert named_in_news(message) == name, message
    for message in (
        "Where does my sister Aya live?",  # a question: its answer is grounded instead
        "What does my brother Lars do",  # spoken, no mark
        "I had lunch with Tor.",  # no relation said
        "My sister is a vet.",  # no name
        "My Friend Is coming over.",  # title case, not a name
    ):
        assert named_in_news(message) is None, message


def test_a_message_pattern_also_holds_the_name() -> None:
    first = saying("Aya")
    assert re.match(first, "That's great news for Aya! A bookshop, how exciting.")
    assert re.match(first, "Aya at a bookshop, how exciting.")
    assert not re.match(first, "Congratulations on your new job!")
    assert not re.match(first, "Good to know! Goodbye! [core memory] Aya works at a bookshop.")
    willing = saying("Lev", willing_pattern())
    assert re.match(willing, "Sure, Lev will love it.")
    assert not re.match(willing, "I hope Lev enjoys it."), "still held to open willingly"
    assert not re.match(willing, "Sure, he will love it.")
    with pytest.raises(ValueError):
        saying('Aya"}')


def agent(llm: ScriptedStream, stores: Stores) -> Agent:
    context = ContextWindow(instructions(), stores.core, ContextConfig(window_tokens=4096))
    return Agent(llm, stores, context, AgentConfig())


def message_patterns(schema: object) -> set[str | None]:
    """The pattern of each message shape in an action schema (None: any message)."""
    assert isinstance(schema, dict)
    return {
        shape["properties"]["message"].get("pattern")
        for shape in schema["anyOf"]
        if "message" in shape["properties"]
    }


def test_every_step_of_the_turn_holds_the_message_to_the_name(stores: Stores) -> None:
    reply = "Good for Aya! A bookshop in Parma, how exciting."
    llm = ScriptedStream(
        action("core_memory_append", label="human", content="Sister Aya works at a bookshop."),
        say(reply),
    )
    turn = agent(llm, stores).respond(
        UserText("My sister Aya just started a new job at a bookshop in Parma.")
    )
    assert turn.reply == reply
    first, second = llm.schemas
    assert message_patterns(first) == {saying("Aya")}
    assert any("tool" in shape["properties"] for shape in first["anyOf"]), "tools still offered"
    assert message_patterns(second) == {saying("Aya")}


def test_a_question_or_a_message_naming_nobody_is_not_held(stores: Stores) -> None:
    for message in ("Where does my sister Aya live?", "I just moved to Luton."):
        llm = ScriptedStream(say("Noted."))
        agent(llm, stores).respond(UserText(message))
        assert "Aya[" not in json.dumps(llm.schemas[0]), message


def test_a_request_routed_to_a_tool_keeps_its_own_pattern(stores: Stores) -> None:
    """A poem asked for at once is held so its lines may break (tools.py); naming someone in
    the request does not take that away."""
    llm = ScriptedStream(say("Aya hums,\nrain on the roof."))
    agent(llm, stores).respond(UserText("Write a poem about my sister Aya."))
    assert message_patterns(llm.schemas[0]) == {COMPOSED_PATTERN}


@pytest.mark.slow
def test_the_real_grammar_holds_the_name(fast_llm: LLMClient) -> None:
    """llama-server turns the pattern into its grammar: the fast model's message says the name
    even where its most likely reply would not."""
    from assistant.agent.tools import TOOLS, action_schema

    schema = action_schema(
        [tool for tool in TOOLS if tool.name == "send_message"], opening=saying("Lev")
    )
    asked = [
        {"role": "system", "content": "Reply with one short sentence."},
        {"role": "user", "content": "My son Lev has swimming lessons every Thursday."},
    ]
    answer = fast_llm.complete_json(asked, schema, max_tokens=60)
    assert "Lev" in answer["message"] and len(answer["message"]) < 300, answer
