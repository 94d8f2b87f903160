"""An answer to what the user told that says none of it is asked again to say what they told
(assistant/agent/checks/evasion.py), alone and in the pipeline."""

from __future__ import annotations

from dataclasses import replace

import pytest

from assistant.agent.checks.check import Seen, Verdict
from assistant.agent.checks.evasion import EvasiveAnswer
from assistant.agent.checks.pipeline import ReplyChecks
from assistant.agent.checks.recent import RecentReplies
from assistant.agent.reply_form import ReplyForm

SAID = (
    "Morning! I'm Wendeline and I keep goats.",
    "My neighbour Osric fixes tractors for a living.",
    "The farrier says my old mare has a loose shoe.",
)
HUMAN = "Name: Wendeline\nNeighbour: Osric"
FORM = ReplyForm(grounded=True)


def seen(heard: str) -> Seen:
    prompt = "\n".join(f"User: {line}" for line in (*SAID, heard))
    return Seen(heard, prompt, RecentReplies([]), HUMAN, said=(*SAID, heard))


def fed(check: EvasiveAnswer | ReplyChecks, text: str, size: int = 4) -> tuple[list[str], str]:
    """What was shown after each piece of ``text``, and what the end gave up."""
    shown = [check.feed(text[at : at + size]) for at in range(0, len(text), size)]
    return shown, check.flush()


@pytest.mark.parametrize(
    "reply",
    [
        "I'm so glad to hear that you told me about your neighbour.",
        "Sure! Your neighbour is a lovely person to have nearby.",
        "Well.",  # the end came with nothing told in it
    ],
)
def test_an_answer_naming_nothing_told_is_asked_again_to_say_it(reply: str) -> None:
    check = EvasiveAnswer.for_step(FORM, seen("Who is my neighbour?"))
    shown, end = fed(check, reply)
    assert "".join(shown) + end == ""
    assert check.verdict is Verdict.REASK and "nothing of what the user told" in check.reason()
    assert check.reasked(FORM) == replace(FORM, recalling=True)
    # The re-ask's form disarms it: it asks once.
    again = EvasiveAnswer.for_step(check.reasked(FORM), seen("Who is my neighbour?"))
    assert again.feed(reply) == reply


def test_an_answer_is_let_through_from_the_first_word_that_answers() -> None:
    check = EvasiveAnswer.for_step(FORM, seen("Remind me what the farrier said about my mare."))
    reply = "Of course! The farrier found a loose shoe on your old mare."
    shown, end = fed(check, reply)
    first = next(at for at, piece in enumerate(shown) if piece)
    # Shown as soon as "loose" was a whole word, before the sentence ended.
    assert "loose " in "".join(shown[: first + 1]) and "mare" not in "".join(shown[: first + 1])
    assert "".join(shown) + end == reply and check.verdict is Verdict.PASS


@pytest.mark.parametrize(
    ("form", "heard"),
    [
        (replace(FORM, recalling=True), "Who is my neighbour?"),
        (replace(FORM, admitting=True), "Who is my neighbour?"),
        (ReplyForm(), "Who is my neighbour?"),  # not a question about the user's life
        (FORM, "Who is my dentist?"),  # never told: the grounding check's to judge
        (FORM, "What should I plant in spring?"),
    ],
)
def test_it_is_disarmed_where_there_is_nothing_told_to_say(form: ReplyForm, heard: str) -> None:
    check = EvasiveAnswer.for_step(form, seen(heard))
    reply = "That is a lovely question to think about today."
    assert check.feed(reply) == reply and check.flush() == ""
    assert check.verdict is Verdict.PASS


@pytest.mark.parametrize(
    "reply",
    [
        "I'm glad you shared that with me, it means a lot.",
        "I don't know who your neighbour is.",
        "I'm sorry, but I can't help with that.",
    ],
)
def test_in_the_pipeline_each_way_of_not_answering_is_asked_to_recall(reply: str) -> None:
    checks = ReplyChecks.for_step(FORM, seen("Who is my neighbour?"))
    shown, end = fed(checks, reply)
    assert checks.reask is not None and checks.reask.name == "evasion"
    assert checks.reask.reasked(FORM).recalling
    assert "".join(shown) + end == ""


@pytest.mark.parametrize("reply", ["I don't know who he is.", "Sorry, I can't help with that."])
def test_a_refusal_where_the_told_line_holds_no_more_than_asked_is_asked_to_recall(
    reply: str,
) -> None:
    """Only the human block's line is left ("Neighbour: Osric"): it holds no word the question
    does not, so no answer can be told from an evasion; the opening guard asks instead."""
    heard = "Who is my neighbour Osric?"
    alone = Seen(heard, f"{HUMAN}\nUser: {heard}", RecentReplies([]), HUMAN, said=(heard,))
    checks = ReplyChecks.for_step(FORM, alone)
    shown, end = fed(checks, reply)
    assert checks.reask is not None and checks.reask.name == "opening"
    assert checks.reask.reasked(FORM) == replace(FORM, recalling=True)
    assert "".join(shown) + end == ""


def test_in_the_pipeline_an_answer_goes_through_whole() -> None:
    checks = ReplyChecks.for_step(FORM, seen("Who is my neighbour?"))
    reply = "Your neighbour is Osric, who fixes tractors."
    shown, end = fed(checks, reply)
    assert checks.reask is None and "".join(shown) + end == reply
