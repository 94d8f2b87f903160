"""An admission alone names the question it answers (assistant/agent/checks/admission.py)."""

from __future__ import annotations

import pytest

from assistant.agent.checks.admission import NamedAdmission, asked_clause
from assistant.agent.checks.check import Verdict
from assistant.agent.events import UserText
from assistant.agent.tools import Stores
from tests.agent_helpers import ScriptedStream, say
from tests.test_agent import make_agent


@pytest.mark.parametrize(
    ("question", "clause"),
    [
        ("How tall is my nephew?", "how tall your nephew is"),
        ("What's my landlord's surname?", "what your landlord's surname is"),
        ("What is my cat called?", "what your cat is called"),
        ("When was my grandmother born?", "when your grandmother was born"),
        ("Where am I staying in Valencia?", "where you are staying in Valencia"),
        ("When is my dentist now?", "when your dentist is now"),
        ("Why isn't my bike fixed?", "why your bike isn't fixed"),
        ("How often do I swim?", "how often you swim"),
        ("What's in my locker at the pool?", "what is in your locker at the pool"),
        ("Which choir does Ottilie sing in?", "which choir Ottilie sings in"),
        (
            "What does my neighbour's son study at the college?",
            "what your neighbour's son studies at the college",
        ),
        ("What does my neighbour's son study?", "what your neighbour's son studies"),
        ("Where does my uncle fish on Sundays?", "where your uncle fishes on Sundays"),
        ("What can my parrot eat?", "what your parrot can eat"),
        ("What won't I eat?", "what you won't eat"),
        ("Who teaches my daughter piano?", "who teaches your daughter piano"),
        # Not built where it could be wrong: a past verb, a noun of two words before the verb,
        # a question about the assistant, no question word.
        ("What did I buy?", None),
        ("Where does my older cousin work now?", None),
        ("What do you like?", None),
        ("Is my passport valid?", None),
    ],
)
def test_a_question_is_said_as_a_clause_to_the_user(question: str, clause: str | None) -> None:
    assert asked_clause(question) == clause


def said(question: str, reply: str, chunk: int) -> tuple[str, NamedAdmission]:
    check = NamedAdmission(question)
    out = "".join(check.feed(reply[i : i + chunk]) for i in range(0, len(reply), chunk))
    return out + check.flush(), check


@pytest.mark.parametrize("chunk", [1, 4, 100])
@pytest.mark.parametrize(
    ("reply", "shown"),
    [
        ("I don't know.", "I don't know how tall your nephew is."),
        ("Sorry, I'm not sure!", "Sorry, I'm not sure how tall your nephew is."),
        ("I don't know that", "I don't know how tall your nephew is."),
        ("I don't know, but I'm sorry, I don't know.", "I don't know how tall your nephew is."),
        ("I'm sorry, I'm not sure.", "I'm sorry, I'm not sure how tall your nephew is."),
        ("I'm sure!", "I'm sure!"),
        # Anything more than the admission is the model's own, left as it is.
        ("I don't know. He was small last year.", "I don't know. He was small last year."),
        ("I don't know how tall he is.", "I don't know how tall he is."),
        ("He is tall.", "He is tall."),
    ],
)
def test_an_admission_alone_is_said_with_the_question(reply: str, shown: str, chunk: int) -> None:
    out, check = said("How tall is my nephew?", reply, chunk)
    assert out == shown
    assert check.verdict is (Verdict.TRIM if out != reply else Verdict.PASS)


def test_without_a_clause_the_admission_stands_and_nothing_is_held() -> None:
    check = NamedAdmission("What did I buy?")
    assert check.feed("I don't know.") == "I don't know." and check.verdict is Verdict.PASS
    assert NamedAdmission("").feed("I don't") == "I don't"


def test_the_agent_says_and_keeps_the_named_admission(stores: Stores) -> None:
    llm = ScriptedStream(say("I don't know."), say("I don't know."))
    brain = make_agent(llm, stores)
    first = brain.respond(UserText("How tall is my nephew?"))
    second = brain.respond(UserText("What's my landlord's surname?"))
    assert first.reply == "I don't know how tall your nephew is."
    assert second.reply == "I don't know what your landlord's surname is."
    assert len(llm.calls) == 2, "two different admissions: no copy to ask again for"
    window = [m["content"] for m in brain.context.messages() if m["role"] == "assistant"]
    assert first.reply in window[-2] and second.reply in window[-1], "kept as shown"
