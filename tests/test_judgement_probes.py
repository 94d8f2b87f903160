"""The judgement probes' rules, on fixed replies: good ones pass, the failures seen fail."""

from collections import Counter

import pytest

from benchmarks.judgement_probes import (
    COMMON,
    EXTRACTION_PROBES,
    KINDS,
    REPLY_PROBES,
    Check,
    ExtractionProbe,
    Reply,
    ReplyProbe,
    admits_not_knowing,
    calls_tool,
    congratulates,
    first_sentence,
    judge,
    judge_plan,
    judge_triplets,
    long_enough,
    mentions,
    mentions_none,
    no_condolence,
    no_congratulation,
    sympathises,
)

PROBES = {probe.name: probe for probe in REPLY_PROBES}
EXTRACTIONS = {probe.name: probe for probe in EXTRACTION_PROBES}


def passes(check: Check, text: str, tools: tuple[str, ...] = ()) -> bool:
    return check("", Reply(text, tools)) is None


def test_no_condolence() -> None:
    check = no_condolence()
    assert passes(check, "Got it, the recital is next Friday at 6 pm.")
    assert not passes(check, "I'm sorry to hear that your daughter's recital is next Friday.")
    assert not passes(check, "Unfortunately the plumber comes on Thursday.")
    # A curly apostrophe is an apostrophe.
    reason = check("", Reply("Oh, that\u2019s sad."))
    assert reason is not None and "that's sad" in reason


def test_congratulates_and_its_opposite() -> None:
    for good in (
        "Congratulations!",
        "Well done, Tomas!",
        "That's wonderful news.",
        "So proud!",
        "Great to hear! I'm glad you passed your driving test.",
    ):
        assert passes(congratulates(), good)
        assert not passes(no_congratulation(), good)
    assert not passes(congratulates(), "Okay, noted.")
    assert passes(no_congratulation(), "I'm sorry, that sounds hard.")


def test_sympathises() -> None:
    check = sympathises()
    for kind in ("I'm sorry to hear that.", "That sounds really tough.", "Oh no, poor Pepper."):
        assert passes(check, kind)
    assert passes(check, "I hope he feels better soon.")
    assert not passes(check, "Okay. Anything else?")


def test_mentions_is_case_blind_and_whole_words() -> None:
    check = mentions("Luis", "your brother")
    assert passes(check, "Nice to meet you, Marta. Luis's job sounds busy.")
    assert passes(check, "Good to know about YOUR BROTHER.")
    assert not passes(mentions("Ana"), "I like bananas.")
    reason = mentions("Valencia")("", Reply("He lives in Spain."))
    assert reason is not None and "Valencia" in reason


def test_mentions_none_catches_an_invention() -> None:
    check = mentions_none("March", "June")
    assert passes(check, "I don't know Ana's birthday.")
    reason = check("", Reply("Ana's birthday is on the 4th of June."))
    assert reason is not None and "june" in reason.lower()
    assert passes(mentions_none("May"), "Maybe you could tell me?")


def test_admits_not_knowing() -> None:
    check = admits_not_knowing()
    for honest in (
        "I don't know your dentist's name.",
        "You haven't told me that yet.",
        "I\u2019m not sure. Do you want to tell me?",
        "I couldn't find it in my notes.",
        "No idea, sorry!",
        "There's no record of that.",
    ):
        assert passes(check, honest), honest
    assert not passes(check, "Your dentist is Dr. Smith.")


def test_calls_tool() -> None:
    check = calls_tool("set_reminder")
    assert passes(check, "I'll remind you.", ("recall", "set_reminder"))
    reason = check("", Reply("I'll remind you at 9.", ()))
    assert reason is not None and "set_reminder" in reason


def test_long_enough() -> None:
    assert passes(long_enough(5), "One two three four five.")
    assert not passes(long_enough(5), "One two three four.")


def test_first_sentence_splits_on_end_marks_and_line_breaks() -> None:
    assert first_sentence("Hello Marta! How are you?") == "Hello Marta!"
    assert first_sentence("Autumn rain falls\nsoft on the roof") == "Autumn rain falls"
    assert first_sentence("It costs 3.5 euros. Fine.") == "It costs 3.5 euros."


def common_reasons(message: str, text: str) -> list[str]:
    return [reason for check in COMMON.values() if (reason := check(message, Reply(text)))]


def test_common_checks_pass_a_plain_reply() -> None:
    assert common_reasons("The plumber comes on Thursday at 10.", "Noted, Thursday at 10.") == []
    # A greeting written back is a greeting.
    assert common_reasons("Good morning!", "Good morning! Sleep well?") == []


@pytest.mark.parametrize(
    ("message", "text", "caught"),
    [
        ("I'm allergic to penicillin.", "I'm allergic to penicillin.", "repeats"),
        ("How are you today?", "As an AI, I don't have feelings, but thanks!", "AI"),
        ("How are you today?", "I'm just a computer program, but I'm fine.", "AI"),
        ("Tell me a long story.", "I'm sorry, but I can't assist with that.", "refusal"),
        ("Tell me a joke.", "I am unable to help with jokes.", "refusal"),
        ("Tell me a joke.", "   ", "empty"),
        (
            "Tell me a joke.",
            "Once upon a time there was a very long sentence that went on and on for ages.",
            "first sentence",
        ),
    ],
)
def test_common_checks_catch(message: str, text: str, caught: str) -> None:
    assert any(caught in reason for reason in common_reasons(message, text))


def test_an_answer_may_take_up_the_words_of_a_question_but_not_copy_it() -> None:
    asked = "What's the capital of France?"
    assert common_reasons(asked, "The capital of France is Paris.") == []
    assert "repeats the user's message" in common_reasons(asked, "What's the capital of France?")


def test_a_probe_may_opt_out_of_a_common_check() -> None:
    copied = "Tell me about the weather."
    strict = ReplyProbe("strict", "small talk", copied)
    lenient = ReplyProbe("lenient", "small talk", copied, skip=("repeat",))
    assert judge(strict, Reply(copied)) == ["repeats the user's message"]
    assert judge(lenient, Reply(copied)) == []
    with pytest.raises(ValueError):
        ReplyProbe("typo", "small talk", copied, skip=("repeats",))
    with pytest.raises(ValueError):
        ReplyProbe("kindless", "gossip", copied)


def test_the_set_is_large_varied_and_named_uniquely() -> None:
    assert len(REPLY_PROBES) >= 40
    assert len(PROBES) == len(REPLY_PROBES)
    kinds = Counter(probe.kind for probe in REPLY_PROBES)
    assert set(kinds) == set(KINDS)
    assert min(kinds.values()) >= 4
    assert all(len(probe.before) <= 2 for probe in REPLY_PROBES)
    assert len(EXTRACTION_PROBES) >= 10
    assert len(EXTRACTIONS) == len(EXTRACTION_PROBES)


def test_every_answer_from_memory_is_in_what_the_agent_sees() -> None:
    for probe in REPLY_PROBES:
        if probe.kind == "answer from memory":
            seen = " ".join((*probe.memories, *probe.before))
            # The question's own checks pass on what the agent was shown.
            assert all(check(probe.message, Reply(seen)) is None for check in probe.checks)


GOOD_REPLIES = {
    "recital": Reply("Lovely, next Friday at 6. Want a reminder that afternoon?"),
    "promotion": Reply("Congratulations! You worked hard for that."),
    "dog died": Reply("I'm so sorry about Pepper. Losing a dog is really hard."),
    "luis city": Reply("Luis lives in Valencia."),
    "ana birthday": Reply("You haven't told me Ana's birthday. When is it?"),
    "marta luis": Reply("Nice to meet you, Marta! A nurse in Valencia, Luis must be busy."),
    "pills": Reply("Okay, I'll remind you at 8 tonight.", ("set_reminder",)),
    "how are you": Reply("Doing well, thanks! How about you?"),
    "lighthouse story": Reply(
        "Here's one about a keeper named Elias. "
        + "Every night he climbed the hundred steps of the lighthouse and lit the lamp. " * 6
        + "One stormy night a small boat found the harbour by his light, and he smiled."
    ),
}


@pytest.mark.parametrize("name", sorted(GOOD_REPLIES))
def test_a_good_reply_passes(name: str) -> None:
    assert judge(PROBES[name], GOOD_REPLIES[name]) == []


# The replies the small models gave (Qwen2.5-Coder 0.5B/1.5B), and the rule each breaks.
BAD_REPLIES = [
    (
        "recital",
        Reply("I'm sorry to hear that your daughter's recital is next Friday at 6 pm."),
        "condolence",
    ),
    ("lighthouse story", Reply("I'm sorry, but I can't assist with that."), "refusal"),
    ("marta luis", Reply("Hello Marta! How can I assist you today?"), "Luis"),
    ("penicillin", Reply("I'm allergic to penicillin."), "repeats"),
    ("ana birthday", Reply("Ana's birthday is on the 12th of May."), "not told"),
    ("dentist name", Reply("Your dentist is Dr. Smith."), "admission"),
    ("pills", Reply("Sure, I'll remind you at 8 tonight."), "set_reminder"),
    ("promotion", Reply("Okay, noted."), "congratulation"),
    ("lost job", Reply("Great news, congrats on the change!"), "sympathy"),
]


@pytest.mark.parametrize(("name", "reply", "reason"), BAD_REPLIES)
def test_a_known_bad_reply_fails(name: str, reply: Reply, reason: str) -> None:
    reasons = judge(PROBES[name], reply)
    assert any(reason in r for r in reasons), reasons


LUIS = EXTRACTIONS["brother nurse"]


def test_good_triplets_pass() -> None:
    triplets = [
        ("Luis", "works as", "nurse"),
        ("Luis", "lives in", "Valencia"),
        ("Marta", "has brother", "Luis"),
    ]
    assert judge_triplets(LUIS, triplets) == []


def test_triplets_giving_luis_job_to_the_user_fail() -> None:
    for subject in ("user", "The User", "you", "I", "Marta"):
        triplets = [("Luis", "lives in", "Valencia"), (subject, "works as", "nurse")]
        reasons = judge_triplets(LUIS, triplets)
        assert len(reasons) == 1 and "'nurse'" in reasons[0], subject


def test_triplets_must_name_the_person() -> None:
    assert judge_triplets(LUIS, [("Marta", "has", "a brother")]) == ["no fact about Luis"]
    both = EXTRACTIONS["two siblings"]
    assert judge_triplets(both, [("Luis", "lives in", "Valencia")]) == ["no fact about Ana"]


def test_the_users_own_fact_stays_the_users() -> None:
    both_jobs = EXTRACTIONS["both jobs"]
    triplets = [("user", "is", "teacher"), ("Daniel", "is", "firefighter")]
    assert judge_triplets(both_jobs, triplets) == []
    assert judge_triplets(both_jobs, [*triplets, ("user", "is", "firefighter")]) != []


def test_plan_chunks_keep_luis_facts_his() -> None:
    assert judge_plan(LUIS, ["Call Luis in Valencia", "Buy groceries"]) == []
    reasons = judge_plan(LUIS, ["Go to work as a nurse at Valencia", "Buy groceries"])
    assert len(reasons) == 1 and "Go to work as a nurse" in reasons[0]
    # Plurals and other forms count.
    assert judge_plan(LUIS, ["Shift handover with the other nurses"]) != []


def test_every_extraction_probe_judges_its_own_memory_subject() -> None:
    for probe in EXTRACTION_PROBES:
        assert isinstance(probe, ExtractionProbe)
        assert all(name.lower() in probe.memory.lower() for name in probe.must_name)
        # Each fact word comes from the memory, so a wrong chunk can only come from it.
        assert all(word.lower() in probe.memory.lower() for word in probe.others_facts), probe.name
        wrong = [(subject, "has", word) for word in probe.others_facts for subject in ["user"]]
        good = [(name, "has", "a fact") for name in probe.must_name]
        assert len(judge_triplets(probe, [*good, *wrong])) == len(probe.others_facts)
        assert judge_plan(probe, [f"Ask {probe.must_name[0]} about {probe.others_facts[0]}"]) == []
