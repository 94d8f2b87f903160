"""A question about the user's life said back as its answer is asked again
(assistant/agent/checks/restated.py)."""

from __future__ import annotations

import pytest

from assistant.agent.checks.check import Seen, Verdict
from assistant.agent.checks.recent import RecentReplies
from assistant.agent.checks.restated import RestatedQuestion
from assistant.agent.events import UserText
from assistant.agent.reply_form import ReplyForm
from assistant.agent.tools import Stores
from tests.agent_helpers import ScriptedStream, say
from tests.test_agent import make_agent


def fed(question: str, reply: str, chunk: int) -> tuple[str, RestatedQuestion]:
    check = RestatedQuestion(question)
    out = "".join(check.feed(reply[i : i + chunk]) for i in range(0, len(reply), chunk))
    return out + check.flush(), check


@pytest.mark.parametrize(
    ("question", "reply"),
    [
        ("When does my lease run out?", "Your lease runs out."),
        (
            "What does the farrier think is wrong with Pepper?",
            "The farrier thinks it's wrong with Pepper. Anything else?",
        ),
        ("Where is my sister working now?", "Your sister is working now!"),
        ("Where is my sister working now?", "As I said, your sister is working now."),
        ("Where will I be staying next week?", "You'll be staying next week."),
    ],
)
@pytest.mark.parametrize("chunk", [1, 4, 200])
def test_the_question_said_back_is_not_shown_and_asked_again(
    question: str, reply: str, chunk: int
) -> None:
    shown, check = fed(question, reply, chunk)
    assert shown == "" and check.verdict is Verdict.REASK
    again = check.reasked(ReplyForm(grounded=True))
    assert again.willing and again.avoiding == (check.restated,)
    assert RestatedQuestion.for_step(again, _seen(question)).verdict is Verdict.PASS


@pytest.mark.parametrize(
    ("question", "reply"),
    [
        ("When does my lease run out?", "Your lease runs out in October."),
        ("When does my lease run out?", "Your lease runs out on the 14th."),
        ("Where is my sister working now?", "Your sister works at the ferry office."),
        ("Where is my sister working now?", "Sure."),
        # A question answered yes or no may say its words back.
        ("Is my sister working now?", "Your sister is working now."),
    ],
)
@pytest.mark.parametrize("chunk", [1, 200])
def test_an_answer_passes(question: str, reply: str, chunk: int) -> None:
    shown, check = fed(question, reply, chunk)
    assert shown == reply and check.verdict is Verdict.PASS


def test_it_holds_only_while_the_words_are_the_questions() -> None:
    check = RestatedQuestion("When does my lease run out?")
    assert check.feed("Your lease ") == ""
    assert check.feed("ends in ") == "Your lease ends in "
    assert check.feed("May.") == "May."


def test_the_agent_asks_again_and_shows_the_answer(stores: Stores) -> None:
    llm = ScriptedStream(
        say("Noted."), say("Your lease runs out."), say("Sure, your lease runs out in October.")
    )
    agent = make_agent(llm, stores)
    agent.respond(UserText("My lease runs out in October."))
    turn = agent.respond(UserText("When does my lease run out?"))
    assert turn.reply == "Sure, your lease runs out in October."
    assert len(llm.calls) == 3


def _seen(question: str) -> Seen:
    return Seen(heard=question, prompt="", recent=RecentReplies(), human="")
