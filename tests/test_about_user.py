"""What the user says of themselves, read by code into the core memory's human block
(assistant/agent/about_user.py), and shown next to a request it bears on."""

from __future__ import annotations

import pytest

from assistant.agent.about_user import Fact, constraints_for, facts_in, merged
from assistant.agent.events import UserText
from assistant.agent.tools import Stores
from tests.agent_helpers import ScriptedStream, say
from tests.test_agent import make_agent


@pytest.mark.parametrize(
    ("said", "lines"),
    [
        ("Hey, I'm Tobias, nice to meet you.", ["Name: Tobias"]),
        ("My name's Ilse.", ["Name: Ilse"]),
        ("I've been vegan for a year now.", ["Diet: vegan"]),
        ("I don't eat pork or beef.", ["Diet: no pork, beef"]),
        ("I'm allergic to sesame and I hate coriander.", ["Allergic to: sesame"]),
        ("I have a shellfish allergy.", ["Allergic to: shellfish"]),
        ("I have asthma, so no smoky rooms.", ["Health: asthma"]),
        ("My boyfriend is called Emeka.", ["Boyfriend: Emeka"]),
        ("Our son, Piet, starts school soon.", ["Son: Piet"]),
        ("We have a ginger cat named Mango.", ["Cat: Mango"]),
        ("I work as a bus mechanic for the council.", ["Work: bus mechanic"]),
        ("I'm a translator at a law firm.", ["Work: translator"]),
        ("I restore old clocks for a living, mostly in Bern.", ["Work: restore old clocks"]),
        ("I live in Utrecht with two flatmates.", ["Lives in: Utrecht"]),
    ],
)
def test_a_statement_about_themselves_becomes_a_line(said: str, lines: list[str]) -> None:
    assert [fact.line() for fact in facts_in(said)] == lines


@pytest.mark.parametrize(
    "said",
    [
        "Am I allergic to anything?",
        "Hi, I'm tired today.",
        "Call me later, please.",
        "I'm a bit late at the office.",
        "I don't eat much before noon.",
        "My brother is a nurse.",
        "i live in a small flat",
    ],
)
def test_questions_and_other_words_are_not_facts(said: str) -> None:
    assert facts_in(said) == []


def test_a_list_grows_and_a_single_fact_is_replaced() -> None:
    block = merged("", Fact("Allergic to", "sesame", True))
    block = merged(block, Fact("Lives in", "Utrecht"))
    block = merged(block, Fact("Allergic to", "kiwi", True))
    block = merged(block, Fact("Lives in", "Dinan"))
    block = merged(block, Fact("Allergic to", "Sesame", True))
    assert block == "Allergic to: sesame; kiwi\nLives in: Dinan"


def test_lines_the_user_wrote_are_kept() -> None:
    block = "Prefers short answers."
    assert merged(block, Fact("Diet", "vegan", True)) == "Prefers short answers.\nDiet: vegan"


def test_a_food_request_is_shown_the_diet_and_allergies() -> None:
    block = "Name: Ilse\nDiet: vegan\nAllergic to: sesame\nCat: Mango"
    shown = constraints_for("What could I cook for dinner?", block)
    assert shown.startswith("Keep to what the user told you: Diet: vegan. Allergic to: sesame.")
    assert constraints_for("What time is it in Lima?", block) == ""
    assert constraints_for("Any dinner ideas?", "Name: Ilse") == ""


def test_the_agent_keeps_it_before_the_reply_and_the_reply_sees_it(stores: Stores) -> None:
    llm = ScriptedStream(say("Noted."), say("How about a lentil stew?"))
    agent = make_agent(llm, stores)
    agent.respond(UserText("I'm vegetarian and I'm allergic to walnuts."))
    assert stores.core.blocks["human"].value == "Diet: vegetarian\nAllergic to: walnuts"
    # The user's words are the last message: no note repeats them.
    assert not any("added to human" in m["content"] for m in llm.calls[0])
    agent.respond(UserText("Suggest a lunch I could make."))
    before_message = llm.calls[1][-2]["content"]
    assert "Diet: vegetarian. Allergic to: walnuts." in before_message
    assert llm.calls[1][-1] == {"role": "user", "content": "Suggest a lunch I could make."}


def test_a_full_human_block_keeps_what_it_holds(stores: Stores) -> None:
    stores.core.set("human", "x" * 395)
    agent = make_agent(ScriptedStream(say("Noted.")), stores)
    agent.respond(UserText("I'm vegan."))
    assert stores.core.blocks["human"].value == "x" * 395
