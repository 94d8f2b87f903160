"""What the user said that bears on a question about their life, quoted next to it
(assistant/agent/told.py)."""

from __future__ import annotations

from assistant.agent.events import UserText
from assistant.agent.told import (
    SELF_STATEMENTS,
    TOLD_HEAD,
    answer_told,
    answering_words,
    asks_for_told,
    bearing_on,
    stem,
    told_answer,
    told_note,
)
from assistant.agent.tools import Stores
from tests.agent_helpers import ScriptedStream, say
from tests.test_agent import make_agent

SAID = [
    "Hello, I'm Dora. I repair clocks in Utrecht.",
    "My cousin Tobiah is a baker in Leiden.",
    "What's a good name for a parrot?",
    "Tobiah just moved from Leiden to Delft.",
    "I'm a glazier at a glassworks in Gouda.",
]
HUMAN = "Name: Dora\nCousin: Tobiah\nWork: glazier"


def test_words_compare_without_their_endings() -> None:
    assert stem("lives") == stem("live") == stem("living") == "liv"
    assert stem("Tobiah's") == "tobiah"
    assert stem("moved") == stem("move")
    assert stem("swimming") == stem("swim") and stem("stopped") == stem("stop")
    assert stem("filled") == stem("fill")


def test_a_relation_finds_its_person_and_the_latest_comes_last() -> None:
    found = bearing_on("Where does my cousin live now?", SAID, HUMAN)
    assert found == [
        "My cousin Tobiah is a baker in Leiden.",
        "Tobiah just moved from Leiden to Delft.",
    ]
    note = told_note("Where does my cousin live now?", SAID, HUMAN)
    assert note.index("Leiden.") < note.index("Delft.") and "the last holds" in note
    assert note.splitlines()[1:] == [f"- {line}" for line in found]


def test_a_line_s_key_finds_what_it_holds() -> None:
    assert bearing_on("Where do I work these days?", SAID, HUMAN) == [SAID[4]]


def test_questions_the_user_s_own_name_and_unrelated_words_are_not_quoted() -> None:
    assert told_note("What is my aunt's name?", SAID, HUMAN) == ""
    assert told_note("What's my favourite song?", SAID, HUMAN) == ""
    assert "parrot" not in told_note("Which parrot did I name?", SAID, HUMAN)


def test_an_answer_is_told_when_the_user_said_every_word_asked_about() -> None:
    assert answer_told("Who is Tobiah?", SAID, "")
    assert answer_told("Who's Tobiah?", [], HUMAN)  # the sentence left the window, the line stays
    assert answer_told("Where is Tobiah these days?", SAID, HUMAN)
    assert answer_told("How long have I been a glazier?", [], HUMAN)  # "how long" only asks
    assert answer_told("What's my cousin's name?", [], HUMAN)
    assert not answer_told("Who is Tobiah's wife?", SAID, HUMAN)  # never said
    assert not answer_told("Who is Dora?", [], HUMAN)  # the user's own name
    assert not answer_told("Who is Marguerite?", SAID, HUMAN)
    assert not answer_told("What did Tobiah bake today?", SAID, HUMAN)  # nothing baked said
    assert not answer_told("Tobiah is where?", SAID, HUMAN)  # not a question word first


def test_a_request_to_be_reminded_asks_like_a_question() -> None:
    for asked in (
        "Remind me what I told you about my cousin.",
        "Tell me again what my cousin does.",
        "Can you remind me who Tobiah is?",
        "Do you remember where I work?",
        "Please tell me about my cousin.",
    ):
        assert asks_for_told(asked), asked
        assert answer_told(asked, SAID, HUMAN), asked
    for other in ("Tell me a joke about my cousin.", "Remind me to call my cousin at six."):
        assert not asks_for_told(other), other


def test_the_words_that_answer_are_what_was_told_beyond_the_question() -> None:
    question = "What does my cousin do these days?"
    told = told_answer(question, SAID, HUMAN)  # a relation holds by its person's name too
    assert told == [SAID[1], SAID[3], "Cousin: Tobiah"]
    answering = answering_words(question, told)
    assert {"tobiah", "baker", "delft"} <= answering
    assert not {"cousin", "day"} & answering  # the question's own words answer nothing
    # Words that only ask ("what is wrong with") are no part of the answer either.
    said = ["The mechanic says the van has a cracked gasket."]
    wrong = "What did the mechanic say is wrong with my van?"
    assert answering_words(wrong, told_answer(wrong, said)) == {"crack", "gasket"}


def test_a_question_about_the_user_as_a_whole_is_answered_by_all_they_said_of_themself() -> None:
    said = [f"I keep {n} beehives." for n in range(8)] + ["The weather is grim.", "My van is red."]
    told = told_answer("What do you know about me so far?", said, HUMAN)
    assert told[:SELF_STATEMENTS] == [*said[4:8], "My van is red."]
    assert "Work: glazier" in told and "The weather is grim." not in told
    assert told_note("What do you know about me?", said, HUMAN).endswith("- My van is red.")
    assert not answer_told("What do you know about me?", [], "Name: Dora")


def test_only_the_best_few_are_quoted_oldest_first() -> None:
    said = [f"The roof leaked in week {n}." for n in range(6)] + ["The roof is fixed."]
    found = bearing_on("Is my roof still leaking?", said)
    assert len(found) == 3 and found[-1].startswith("The roof leaked in week 5")


def test_the_agent_puts_the_note_before_a_question_about_the_user(stores: Stores) -> None:
    llm = ScriptedStream(say("Noted."), say("Noted."), say("Tobiah lives in Delft."))
    agent = make_agent(llm, stores)
    agent.respond(UserText("My cousin Tobiah is a baker in Leiden."))
    agent.respond(UserText("Tobiah just moved from Leiden to Delft."))
    agent.respond(UserText("Where does my cousin live now?"))
    prompt = [m["content"] for m in llm.calls[2]]
    note = next(content for content in prompt if TOLD_HEAD in content)
    assert prompt.index(note) == len(prompt) - 2, "right before the question"
    assert "Delft" in note


def test_a_question_about_what_was_told_naming_no_one_is_answered_from_it(stores: Stores) -> None:
    """No "my", no name: the user's own sentence holding every word asked about makes it a
    question about their life all the same, quoted before it and checked as one."""
    llm = ScriptedStream(
        say("Noted."), say("The kiln opens at 8:30 PM."), say("You told me that it is Thursday.")
    )
    agent = make_agent(llm, stores)
    agent.respond(UserText("The pottery class moved to Thursday at seven."))
    turn = agent.respond(UserText("When is the pottery class?"))
    prompt = [m["content"] for m in llm.calls[1]]
    assert any(TOLD_HEAD in content and "Thursday" in content for content in prompt)
    # The made-up hour was never shown: asked again, held to say what was told.
    assert turn.reply == "You told me that it is Thursday."
    assert len(llm.calls) == 3


def test_a_reminder_about_something_is_no_request_to_be_told() -> None:
    """Routing sets a reminder for "Remind me about ..."; only a wh-word after "remind me"
    asks for what was told."""
    assert not asks_for_told("Remind me about the meeting at 3.")
    assert asks_for_told("Remind me who Tobiah is.") and asks_for_told("Tell me about Tobiah.")
