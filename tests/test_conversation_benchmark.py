"""The conversation benchmark's rules (benchmarks/conversation_rules.py) and its cases: each rule
catches what it names and lets an ordinary reply through."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.conversation import CASES, Conversation, core_kept, load, score, shown_to_agent
from benchmarks.conversation_rules import Case, Seen, judge, says_unknown

INSTRUCTIONS = (
    "You are a helpful assistant. Example: User: My cousin became a baker. "
    "Reply: Good for your cousin! A baker, what a lovely trade."
)


def seen(
    said: list[str], replies: list[str] | None = None, shown: str = "", user: str = "Rosa"
) -> Seen:
    return Seen(user, tuple(said), tuple(replies or ()), INSTRUCTIONS, shown)


def test_an_ordinary_answer_passes() -> None:
    case = Case("Where does my uncle live?", expect_any=("Galway",))
    said = ["My uncle Brendan lives in Galway.", case.say]
    verdict = judge(case, "Your uncle Brendan lives in Galway.", seen(said))
    assert verdict.passed, verdict.reasons()


def test_an_earlier_reply_word_for_word_is_a_copy() -> None:
    case = Case("I'm off to the market.")
    verdict = judge(case, "That sounds lovely!", seen([case.say], ["That sounds lovely!"]))
    assert verdict.copies == ["an earlier reply, word for word"]


def test_a_long_sentence_of_an_earlier_reply_is_a_copy() -> None:
    case = Case("My knee hurts.")
    earlier = ["Good news, I hope the rest of your week goes just as well."]
    reply = "Oh no. Good news, I hope the rest of your week goes just as well."
    assert judge(case, reply, seen([case.say], earlier)).copies


def test_a_span_of_the_instructions_is_a_copy_unless_the_user_said_it() -> None:
    case = Case("My neighbour opened a bakery.")
    reply = "A baker, what a lovely trade."
    assert judge(case, reply, seen([case.say])).copies[0].startswith("the instructions")
    said = ["I always say a baker, what a lovely trade.", case.say]
    assert not judge(case, reply, seen(said)).copies


def test_speaking_to_someone_else_is_the_wrong_person() -> None:
    case = Case("My brother Ivo got a new job.")
    assert judge(case, "Congratulations, Ivo!", seen([case.say])).wrong_person
    assert judge(case, "Good for you, Brain OS, that's great.", seen([case.say])).wrong_person
    assert not judge(case, "Thanks, Rosa! Good for Ivo.", seen([case.say])).wrong_person


def test_the_users_own_words_in_the_first_person_are_the_wrong_person() -> None:
    case = Case("Who do I work for?")
    said = ["I work for a shipping firm in Rotterdam.", case.say]
    reply = "I work for a shipping firm in Rotterdam."
    assert judge(case, reply, seen(said)).wrong_person
    assert not judge(case, "You work for a shipping firm in Rotterdam.", seen(said)).wrong_person


def test_i_dont_know_what_it_was_shown_is_counted() -> None:
    case = Case("What's my dog called?", expect_any=("Nuno",))
    said = ["My dog is called Nuno.", case.say]
    shown = "user: My dog is called Nuno."
    verdict = judge(case, "I don't know, you haven't told me.", seen(said, shown=shown))
    assert verdict.unknown_but_shown
    hidden = judge(case, "I don't know, you haven't told me.", seen(said, shown="(nothing)"))
    assert not hidden.unknown_but_shown and hidden.wrong


def test_a_name_or_number_nobody_said_is_invented() -> None:
    case = Case("What's my aunt's name?", never_said=True)
    verdict = judge(case, "Your aunt is called Margit and she is 64.", seen([case.say]))
    assert verdict.invented == ["Margit", "64"]
    assert "never told, yet answered as if it knew" in verdict.wrong


def test_never_said_passes_when_the_reply_admits_it() -> None:
    case = Case("What's my aunt's name?", never_said=True)
    assert judge(case, "You haven't told me. What is her name?", seen([case.say])).passed


def test_a_creative_reply_may_name_what_nobody_said() -> None:
    case = Case("Tell me a joke.", creative=True)
    reply = "Why did Gerald bring 3 ladders to the party? It was a high-rise event."
    assert judge(case, reply, seen([case.say])).passed


def test_a_forbidden_word_fails_a_diet() -> None:
    case = Case("What should I cook?", creative=True, forbid=("chicken",))
    assert judge(case, "How about a chicken stir-fry?", seen([case.say])).wrong


def test_a_reminder_reply_may_give_its_resolved_time() -> None:
    case = Case("Remind me at 5 to stretch.", tool="reminder", expect_any=("5",))
    reply = "I'll remind you today at 5 pm (17:00): stretch."
    assert judge(case, reply, seen([case.say])).passed


@pytest.mark.parametrize(
    "reply",
    ["I don't know.", "You haven't told me that.", "I\u2019m not sure, what is it?"],
)
def test_ways_of_not_knowing(reply: str) -> None:
    assert says_unknown(reply)


@pytest.mark.parametrize(
    ("news", "reply", "wrong"),
    [
        ("bad", "Great! Your bike was stolen.", "Great"),
        ("bad", "That's wonderful. The shop closed.", "That's wonderful"),
        ("bad", "Oh no, that's a rotten start to the week.", None),
        ("good", "I'm so sorry. You got the flat!", "I'm so sorry"),
        ("good", "Congratulations on the flat!", None),
        ("plain", "Good news! Your cousin is a baker.", "Good news"),
        ("plain", "Congratulations! Your cousin is a baker.", "Congratulations"),
        ("plain", "Oh no, your cousin is a baker.", "Oh no"),
        ("plain", "Great, a baker in the family.", None),
        (None, "Good news! Here is the joke.", None),
    ],
)
def test_the_tone_of_an_opening_is_judged_by_the_news(
    news: str | None, reply: str, wrong: str | None
) -> None:
    case = Case("Some news.", news=news)
    verdict = judge(case, reply, seen([case.say]))
    assert verdict.wrong_tone == wrong
    assert verdict.passed is (wrong is None), verdict.reasons()


def test_both_halves_load_and_keep_apart() -> None:
    dev, test = load("dev"), load("test")
    assert len(dev) >= 4 and len(test) >= 4
    assert {c.name for c in dev}.isdisjoint(c.name for c in test)
    for conversation in dev + test:
        assert 20 <= len(conversation.cases) <= 40
        tools = {case.tool for case in conversation.cases}
        assert {"reminder", "task"} <= tools, conversation.name
        assert any(case.never_said for case in conversation.cases), conversation.name
        news = {case.news for case in conversation.cases}
        assert {"bad", "plain"} <= news, conversation.name

    def messages(conversations: list[Conversation]) -> set[str]:
        return {case.say for c in conversations for case in c.cases if not case.say.endswith("?")}

    assert messages(dev).isdisjoint(messages(test))
    assert json.loads((CASES / "dev.json").read_text())["half"] == "dev"


def test_the_score_counts_each_rule_and_keeps_failed_turns_at_their_timeout() -> None:
    from benchmarks.conversation import TurnResult

    good = TurnResult("c", 1, Case("Hi."), reply="Hello!", first_word_ms=800)
    timed_out = TurnResult("c", 2, Case("Hm."), error="no reply in 120 s")
    copied = TurnResult("c", 3, Case("Ok."), reply="Hello!", first_word_ms=900)
    copied.verdict = judge(copied.case, copied.reply, seen(["Hi.", "Ok."], ["Hello!"]))
    figures = score([good, timed_out, copied], [(1, 2)])
    assert figures["turns"] == 3 and figures["passed"] == 1
    assert figures["copies"] == 1 and figures["failed"] == 1
    assert figures["first_word_ms"]["max"] == 120_000
    assert figures["core_kept"] == "1/2"


def test_core_facts_are_found_in_any_of_their_forms() -> None:
    conversation = Conversation("c", "Rosa", (), core=("vegan|plant-based", "Teodor"))
    assert core_kept(conversation, "Diet: plant-based. Partner: Teodor.") == (2, 2)
    assert core_kept(conversation, "") == (0, 2)


def test_an_answer_about_the_user_in_the_first_person_speaks_as_them() -> None:
    case = Case("Which choir do I sing in?", expect_any=("Cantoria",))
    said = ["I sing in the Cantoria choir on Thursdays.", case.say]
    assert judge(case, "I sing in Cantoria.", seen(said)).wrong_person
    assert not judge(case, "You sing in Cantoria.", seen(said)).wrong_person
    assert not judge(case, "I think you sing in Cantoria.", seen(said)).wrong_person


def test_an_own_first_person_word_after_a_greeting_is_no_one_addressed() -> None:
    case = Case("Thanks for the help.")
    assert judge(case, "You're welcome! I'm glad I could help.", seen([case.say])).passed


def test_a_lower_case_word_after_a_greeting_is_no_one_addressed() -> None:
    case = Case("My aunt Zofia died last week.")
    assert not judge(case, "I'm sorry about your aunt Zofia.", seen([case.say])).wrong_person
    assert not judge(case, "Goodbye, talk soon.", seen([case.say])).wrong_person


def test_what_the_saved_window_told_the_agent_is_its_instructions_persona_and_framing(
    tmp_path: Path,
) -> None:
    state = {
        "instructions": "Be kind and brief.",
        "core_snapshot": '<persona chars="30/1200">\nYou are a helper on a laptop.\n</persona>\n'
        '<human chars="12/1200">\nName: Rosa\n</human>',
        "fifo": [
            {"role": "system", "content": "[heartbeat t] Nobody spoke. Changed:\n1. Rain at 4"},
            {"role": "system", "content": "[task t1 finished] Three notes on the roses.\nTell"},
            {"role": "system", "content": "Memories:\n- (2026-01-02) Rosa pruned the roses"},
            {"role": "user", "content": "Anything new?"},
        ],
    }
    (tmp_path / "context.json").write_text(json.dumps(state), encoding="utf-8")
    told, shown = shown_to_agent(tmp_path)
    for note in ("Be kind and brief.", "You are a helper on a laptop.", "Nobody spoke. Changed:"):
        assert note in told
    for fact in ("Name: Rosa", "Rain at 4", "Three notes on the roses.", "pruned the roses"):
        assert fact not in told and fact in shown
