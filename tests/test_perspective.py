"""An answer about the user said to them, not in their voice
(assistant/agent/checks/perspective.py)."""

from __future__ import annotations

import pytest

from assistant.agent.checks.check import Verdict
from assistant.agent.checks.perspective import Perspective
from assistant.agent.events import UserText
from assistant.agent.tools import Stores
from tests.agent_helpers import ScriptedStream, say
from tests.test_agent import make_agent


def turned(text: str, chunk: int, heard: str = "") -> str:
    voice = Perspective(armed=True, heard=heard)
    out = "".join(voice.feed(text[i : i + chunk]) for i in range(0, len(text), chunk))
    return out + voice.flush()


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        ("I am allergic to kiwis.", "You are allergic to kiwis."),
        ("My nephew is nine.", "Your nephew is nine."),
        ("I'm on the early shift.", "You're on the early shift."),
        (
            "I fix bikes with my uncle. I hope that helps!",
            "You fix bikes with your uncle. I hope that helps!",
        ),
        ("I was in Tampere last spring.", "You were in Tampere last spring."),
        # Their "you" is the assistant (as an object; a subject is left).
        (
            "I showed you my kiln and you liked it.",
            "You showed me your kiln and you liked it.",
        ),
        ("I don't know, you haven't told me.", "I don't know, you haven't told me."),
        ("I'm not sure what your nephew likes.", "I'm not sure what your nephew likes."),
        ("Your nephew is nine.", "Your nephew is nine."),
        ("Sure! My guess is the harbour.", "Sure! My guess is the harbour."),
    ],
)
@pytest.mark.parametrize("chunk", [1, 3, 100])
def test_first_person_answers_are_turned_as_they_stream(reply: str, said: str, chunk: int) -> None:
    assert turned(reply, chunk) == said


@pytest.mark.parametrize(
    ("heard", "reply", "said"),
    [
        (
            "Why can't I drink milk?",
            "I can't drink milk because I'm lactose intolerant.",
            "You can't drink milk because you're lactose intolerant.",
        ),
        ("Should I take the early ferry?", "I should take it, yes.", "You should take it, yes."),
        # The assistant's own voice, where the question's words come in another order.
        (
            "Do you think I should repaint the shed?",
            "I think you should, it has faded.",
            "I think you should, it has faded.",
        ),
        ("Why can't I drink milk?", "I can't say for sure.", "I can't say for sure."),
    ],
)
@pytest.mark.parametrize("chunk", [1, 100])
def test_a_question_said_back_as_a_statement_is_the_users_voice(
    heard: str, reply: str, said: str, chunk: int
) -> None:
    assert turned(reply, chunk, heard) == said


@pytest.mark.parametrize(
    ("heard", "reply", "said"),
    [
        ("How tall am I?", "I don't know how tall I am.", "I don't know how tall you are."),
        (
            "Which gym did I join?",
            "I'm not sure which gym I joined. Tell me?",
            "I'm not sure which gym you joined. Tell me?",
        ),
        # The clause speaks to the user: their "you", and the assistant's "me", stay.
        (
            "What did I say about my aunt?",
            "I don't know what you told me about my aunt.",
            "I don't know what you told me about your aunt.",
        ),
        ("How tall am I?", "I don't know my height.", "I don't know your height."),
        # A clause about nothing the user asked of is the assistant's own.
        ("How tall am I?", "I'm not sure if I was told.", "I'm not sure if I was told."),
        ("Who is Oriel?", "I don't know who Oriel is.", "I don't know who Oriel is."),
        # A clause in the question's order is said in a statement's, not asked back.
        (
            "What can't I plant?",
            "I don't know what can't I plant. Ask a gardener.",
            "I don't know what you can't plant. Ask a gardener.",
        ),
        (
            "How old am I?",
            "I'm not sure how old am I, sorry.",
            "I'm not sure how old you are, sorry.",
        ),
    ],
)
@pytest.mark.parametrize("chunk", [1, 100])
def test_an_admissions_clause_about_the_user_is_said_to_them(
    heard: str, reply: str, said: str, chunk: int
) -> None:
    assert turned(reply, chunk, heard) == said


def test_unarmed_it_passes_everything() -> None:
    voice = Perspective(armed=False)
    assert voice.feed("I am here.") == "I am here." and voice.flush() == ""
    assert not voice.changed


def test_the_agent_turns_an_answer_about_the_user_and_keeps_what_was_shown(
    stores: Stores,
) -> None:
    llm = ScriptedStream(say("Noted."), say("I am allergic to kiwis."), say("Good."))
    agent = make_agent(llm, stores)
    agent.respond(UserText("I'm allergic to kiwis."))
    turn = agent.respond(UserText("What am I allergic to?"))
    assert turn.reply == "You are allergic to kiwis."
    agent.respond(UserText("Thanks."))
    assert '{"message": "You are allergic to kiwis."}' in [m["content"] for m in llm.calls[2]]


@pytest.mark.parametrize("chunk", [1, 3, 100])
def test_an_owned_answer_is_turned_after_its_lead_in(chunk: int) -> None:
    said = turned("As I said, my nephew is nine. I hope that helps.", chunk)
    assert said == "As I said, your nephew is nine. I hope that helps."


def test_an_answer_saying_what_was_told_turns_the_user_s_words_after_it() -> None:
    check = Perspective(armed=True, heard="Who is my manager?")
    text = "You told me that my manager is Ottilie and I report to her."
    shown = "".join(check.feed(text[i : i + 4]) for i in range(0, len(text), 4)) + check.flush()
    assert shown == "You told me that your manager is Ottilie and you report to her."
    assert check.verdict is Verdict.TRIM


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("Sure, my son is twelve.", "Sure, your son is twelve."),
        ("As I said, yes, my son is twelve.", "As I said, yes, your son is twelve."),
        ("Yes, I am glad you asked.", "Yes, I am glad you asked."),
    ],
)
def test_an_answer_is_judged_past_a_word_of_assent(text: str, said: str) -> None:
    check = Perspective(armed=True, heard="How old is my son?")
    shown = "".join(check.feed(text[i : i + 3]) for i in range(0, len(text), 3)) + check.flush()
    assert shown == said
