"""An answer about the user's life says nothing it was not told (agent/checks/grounding.py)."""

from __future__ import annotations

import json

import pytest

from assistant.agent.agent import Agent
from assistant.agent.checks.check import Verdict
from assistant.agent.checks.grounding import HOLD_WORDS, GroundCheck, about_what_they_told, invented
from assistant.agent.context import ContextConfig, ContextWindow
from assistant.agent.events import UserText
from assistant.agent.instructions import instructions
from assistant.agent.step_request import ADMITTING_GRAMMAR, RECALLING_GRAMMAR
from assistant.agent.tools import UNKNOWN_PATTERN, Stores
from assistant.agent.turn import AgentConfig
from tests.agent_helpers import ScriptedStream, say
from tests.test_plain_replies import plain_agent

KNOWN = (
    "User: My brother Lars lives in Valletta and works as a nurse. Dr. Ruiz on the 4th at 10:30."
)


def known(words: str) -> set[str]:
    return {w.lower().strip(".,:") for w in words.split()}


def test_names_and_numbers_not_in_the_prompt_are_inventions() -> None:
    words = known(KNOWN)
    assert invented("Your dentist's name is Dr. Jenssen.", words) == ["Jenssen"]
    assert invented("Lars is 31 years old.", words) == ["31"]
    assert invented("Your flight is on Monday at 10:00.", words) == ["Monday", "10:00"]
    assert invented("Lars lives in Valletta.", words) == [], "the first word is no name"
    assert invented("He sees Dr. Ruiz on the 4th at 10:30.", words) == []
    assert invented("I don't know. You haven't told me.", words) == []


def test_the_check_holds_each_sentence_until_it_ends() -> None:
    check = GroundCheck(KNOWN)
    assert check.feed("Lars lives in Val") == ""
    assert check.feed("letta. He is") == "Lars lives in Valletta. "
    assert check.feed(" 31.") == "" and check.flush() == ""
    assert check.invented == ["31"] and check.cut
    idle = GroundCheck(KNOWN, armed=False)
    assert idle.feed("Lars is 31.") == "Lars is 31." and idle.flush() == ""


def test_a_sentence_that_runs_on_is_said_in_parts_and_still_checked() -> None:
    """A packing list as one sentence was held 30 s; past HOLD_WORDS words the part so far is
    checked and said, and a name made up after it still stops the answer."""
    check = GroundCheck(KNOWN)
    items = "socks, shirts, a towel, a charger, " * 5
    said = check.feed("For Valletta pack " + items)
    assert len(said.split()) >= HOLD_WORDS and said.startswith("For Valletta pack socks")
    assert check.feed("and ask Jenssen ") == ""
    assert check.feed("about it.") == "" and check.flush() == ""
    assert check.invented == ["Jenssen"] and check.cut
    whole = GroundCheck(KNOWN)
    words = "Lars lives in Valletta, works as a nurse, " + items + "and sees Dr. Ruiz."
    assert (whole.feed(words) + whole.flush()).split() == words.split()


def grounded(message: str) -> str:
    return json.dumps({"known": True, "message": message})


def agent(llm: ScriptedStream, stores: Stores) -> Agent:
    context = ContextWindow(instructions(), stores.core, ContextConfig(window_tokens=4096))
    return Agent(llm, stores, context, AgentConfig())


def test_a_made_up_answer_is_asked_again_to_admit_it(stores: Stores) -> None:
    llm = ScriptedStream(
        grounded("Your optician's name is Dr. Jenssen."),
        say("I don't know, you haven't told me."),
    )
    pieces: list[str] = []
    turn = agent(llm, stores).respond(UserText("What's my optician's name?"), on_text=pieces.append)
    assert turn.reply == "I don't know, you haven't told me." == "".join(pieces)
    assert len(llm.calls) == 2
    [shape] = llm.schemas[1]["anyOf"]  # type: ignore[index]
    assert shape["properties"]["message"]["pattern"] == UNKNOWN_PATTERN, "held to admit it"


def test_a_made_up_answer_to_what_the_user_told_is_asked_again_to_say_what_they_told(
    stores: Stores,
) -> None:
    told = "My husband Anselm bakes bread, and our son Pavo is nine."
    llm = ScriptedStream(
        "Okay, noted.",
        "Your son's name is Dorotea.",
        "You told me that your son Pavo is nine.",
        "Your son's name is Dorotea.",
        "You told me that your son is called Dorotea.",
        "I don't know what your son's name is.",
    )
    agent = plain_agent(llm, stores)
    agent.respond(UserText(told))
    turn = agent.respond(UserText("What's my son's name?"))
    assert turn.reply == "You told me that your son Pavo is nine."
    assert llm.grammars[1:] == [None, RECALLING_GRAMMAR]
    # Made up again after "You told me", it is held to admit it.
    turn = agent.respond(UserText("What is my son called?"))
    assert turn.reply == "I don't know what your son's name is."
    assert llm.grammars[3:] == [None, RECALLING_GRAMMAR, ADMITTING_GRAMMAR]


def test_an_admission_that_goes_on_to_make_it_up_ends_before_it(stores: Stores) -> None:
    llm = ScriptedStream(
        grounded("Your optician's name is Dr. Jenssen."),
        say("I don't know, but your optician is Dr. Jenssen on Mill Street."),
    )
    pieces: list[str] = []
    turn = agent(llm, stores).respond(UserText("What's my optician's name?"), on_text=pieces.append)
    # The admission left names the question (checks/admission.py).
    assert turn.reply == "I don't know what your optician's name is." == "".join(pieces)
    assert len(llm.calls) == 2, "asked again once, then stopped"


def test_an_admission_cut_short_is_no_copy_of_an_earlier_one(stores: Stores) -> None:
    llm = ScriptedStream(
        say("I don't know."),
        grounded("Your optician's name is Dr. Jenssen."),
        say("I don't know, but your optician is Dr. Jenssen."),
    )
    brain = agent(llm, stores)
    brain.respond(UserText("Do you know my favourite colour?"))
    turn = brain.respond(UserText("What's my optician's name?"))
    said = "I don't know what your optician's name is."
    assert turn.reply == said and len(llm.calls) == 3, "no third try for the copy"


@pytest.mark.parametrize(
    ("said", "kept"),
    [
        (
            "I don't know what Oskar studies, maybe Physics in Turku.",
            "I don't know what Oskar studies.",
        ),
        ("I don't know; I'd guess 42.", "I don't know."),
        ("I don't know Bernt at all.", "I don't know."),
    ],
)
def test_an_admission_keeps_the_clauses_before_the_made_up_one(said: str, kept: str) -> None:
    check = GroundCheck("User: my nephew Oskar", question="What does Oskar study?", admitting=True)
    assert check.feed(said) + check.flush() == kept
    assert check.verdict is Verdict.STOP


def test_an_answer_asked_to_admit_it_that_does_not_is_left_as_it_came() -> None:
    """An endpoint that ignores the admitting pattern: the reply goes out unchecked."""
    check = GroundCheck("User: my nephew Oskar", question="What does Oskar study?", admitting=True)
    said = "Oskar studies Physics in Turku."
    assert check.feed(said) + check.flush() == said and check.verdict is Verdict.PASS


def test_what_was_told_is_answered_and_a_made_up_addition_cut(stores: Stores) -> None:
    stores.stream.add("User: My brother Lars lives in Valletta.", importance=6)
    llm = ScriptedStream(grounded("Lars lives in Valletta. He moved there in 2019."))
    pieces: list[str] = []
    turn = agent(llm, stores).respond(UserText("Where does Lars live?"), on_text=pieces.append)
    assert turn.reply == "Lars lives in Valletta." == "".join(pieces).strip()
    assert len(llm.calls) == 1


def test_general_knowledge_about_a_name_is_not_checked() -> None:
    question = "What's the capital of Greece?"
    assert not about_what_they_told(question, f"instructions\n{question}")
    assert about_what_they_told(
        "When is Aya's birthday?", "User: my sister Aya\nWhen is Aya's birthday?"
    )
    assert about_what_they_told("What's my optician's name?", "What's my optician's name?")


def test_a_templates_blank_stands_for_what_it_did_not_know() -> None:
    from assistant.agent.checks.grounding import invented

    assert invented("You work at [insert company name].", {"you", "work", "at"}) == [
        "[insert company name]"
    ]


def test_the_user_s_own_name_given_for_someone_else_counts_as_made_up() -> None:
    from assistant.agent.checks.check import Seen
    from assistant.agent.checks.grounding import own_name_in
    from assistant.agent.checks.recent import RecentReplies
    from assistant.agent.reply_form import ReplyForm

    assert own_name_in("Your optician's name is Ilse.", "Ilse")
    assert own_name_in("Oh, I'm Ilse, your assistant.", "Ilse")
    assert not own_name_in("Sure, Ilse.", "Ilse")
    assert not own_name_in("Well Ilse, you haven't told me.", "Ilse")

    def answer(question: str, reply: str) -> GroundCheck:
        prompt = f"User: Hi, I'm Ilse. {question}"
        seen = Seen(question, prompt, RecentReplies(), "Name: Ilse")
        check = GroundCheck.for_step(ReplyForm(grounded=True), seen)
        check.feed(reply)
        check.flush()
        return check

    assert answer("What's my optician's name?", "Your optician is Ilse.").invented == ["Ilse"]
    assert answer("What's my name?", "Your name is Ilse.").invented == []
    assert answer("What do you know about me?", "You're Ilse.").invented == []
    assert answer("Where do I live, do you know?", "I don't know, Ilse.").invented == []


def test_a_name_with_an_accent_is_read_whole() -> None:
    """Read up to its accent, a name that was said ("Tomé") was a name nobody said ("Tom"),
    and the right answer was asked again to admit it did not know."""
    from assistant.agent.about_user import facts_in

    assert invented("Your partner is Tomé.", known("User: My partner is called Tomé.")) == []
    assert invented("Your partner is Tomás.", known("User: My partner is called Tomé.")) == [
        "Tomás"
    ]
    assert [f.line() for f in facts_in("My partner is called Tomé.")] == ["Partner: Tomé"]
    assert [f.line() for f in facts_in("Hi, I'm Søren.")] == ["Name: Søren"]


def _answered(question: str, reply: str, told: str, human: str = "Name: Ilse") -> GroundCheck:
    from assistant.agent.checks.check import Seen
    from assistant.agent.checks.recent import RecentReplies
    from assistant.agent.reply_form import ReplyForm

    prompt = f"{told}\n{human}\n{question}"
    seen = Seen(question, prompt, RecentReplies(), human, facts=f"{human}\n{told}\n{question}")
    check = GroundCheck.for_step(ReplyForm(grounded=True), seen)
    check.feed(reply)
    check.flush()
    return check


# A fact told of someone else (a name, a number) is no answer about a person never mentioned.
TOLD_OF_ELSE = [
    ("What's my wife's name?", "Your wife is Rosa.", "My sister Rosa runs a bakery.", ""),
    ("Who is my dentist?", "Your dentist is Tomas.", "My brother Tomas met Milo.", ""),
    ("How many cousins do I have?", "You have 3 cousins.", "I have 3 dogs.", ""),
]
TOLD_OF_IT = [
    ("How old is Pip?", "Pip is 9.", "Our dog Pip turned 9 in May.", ""),
    # The brother is named by the human block; the line names him, not the relation.
    ("Where does my brother live?", "In York.", "Tomas moved to York.", "Brother: Tomas"),
    ("What's my partner called?", "Odile.", "My partner Odile teaches chemistry.", ""),
    # About the user's own things: their lines seldom share the question's words.
    ("What's my job?", "You're a baker in Ghent.", "", "Name: Ilse\nWork: baker in Ghent"),
    ("Where do I work?", "You work in Lyon.", "I drive buses in Lyon.", ""),
]


@pytest.mark.parametrize(
    ("question", "reply", "told", "human", "founded"),
    [(*case, False) for case in TOLD_OF_ELSE] + [(*case, True) for case in TOLD_OF_IT],
)
def test_a_fact_about_someone_comes_from_a_line_about_them(
    question: str, reply: str, told: str, human: str, founded: bool
) -> None:
    check = _answered(question, reply, told, human)
    assert bool(check.invented) is not founded
    assert check.verdict is (Verdict.PASS if founded else Verdict.REASK)
