"""A run of words copied into a reply (assistant/agent/checks/runs.py), from a note of the
prompt or an earlier reply: held while it could still be one, asked again at the opening,
stopped before later in the first sentence, a later sentence holding one left out, and nothing
the model was told of the user's world taken for one."""

from __future__ import annotations

import pytest

from assistant.agent.checks.check import Seen, Verdict
from assistant.agent.checks.recent import RecentReplies
from assistant.agent.checks.runs import CopiedRun, prompt_notes, run_words
from assistant.agent.context import ASSISTANT_SPEAKER, MEMORIES_HEAD, SUMMARY_HEAD
from assistant.agent.core_memory import DEFAULT_BLOCKS
from assistant.agent.events import HeartbeatTick, TaskFinished, UserText
from assistant.agent.reply_form import ReplyForm
from assistant.agent.tools import Stores
from tests.agent_helpers import ScriptedStream, agent_on, say

PERSONA = DEFAULT_BLOCKS["persona"][1]
NOTES = (
    "Answer in plain words, as a friend would across the table.\n"
    f"## Core memory\n{PERSONA}\n"
    "[timer] set for the kettle; it rings in four minutes from now"
)
FACTS = "Name: Tamsin\nTamsin keeps bees on the allotment behind the old mill"


def streamed(check: CopiedRun, text: str, size: int = 4) -> tuple[str, list[str]]:
    """What the check shows of ``text`` fed ``size`` characters at a time, and what it had
    shown after each piece."""
    shown, steps = "", []
    for start in range(0, len(text), size):
        shown += check.feed(text[start : start + size])
        steps.append(shown)
        if check.verdict in (Verdict.STOP, Verdict.REASK):
            return shown, steps
    return shown + check.flush(), steps


@pytest.mark.parametrize(
    "reply",
    [
        # The persona said back as written, turned to the model's own voice, after an opening
        # word the guard let through.
        "You are Brain OS, the user's personal assistant on their computer.",
        "I'm Brain OS, your personal assistant on your computer: warm and brief.",
        "You're a Brain OS user, a personal assistant on your computer.",
    ],
)
def test_a_note_at_the_opening_is_never_shown_and_asked_again(reply: str) -> None:
    check = CopiedRun(NOTES, FACTS)
    shown, _ = streamed(check, reply)
    assert check.verdict is Verdict.REASK
    assert shown == ""
    form = check.reasked(ReplyForm())
    assert form.willing and form.avoiding and form.avoiding[0] == check.copied
    assert check.copied is not None and "brain os" in check.copied


def test_a_note_in_the_first_sentence_after_words_shown_stops_the_reply_before_it() -> None:
    check = CopiedRun(NOTES, FACTS)
    shown, _ = streamed(check, "Well, you're Brain OS, the user's personal assistant.")
    assert check.verdict is Verdict.STOP
    # The words before the note were shown as they came; none of the note is.
    assert shown.strip() == "Well,"


def test_a_later_sentence_saying_a_note_is_left_out() -> None:
    check = CopiedRun(NOTES, FACTS)
    shown, _ = streamed(check, "Tea is ready soon. Timer set for the kettle; it rings soon. Enjoy!")
    assert check.verdict is Verdict.TRIM
    assert shown == "Tea is ready soon. Enjoy!"


def test_an_ordinary_reply_streams_through_unchanged_and_is_held_a_word_or_two_at_most() -> None:
    check = CopiedRun(NOTES, FACTS)
    reply = "Honey from the allotment sounds lovely; how many hives do you keep there now?"
    shown, steps = streamed(check, reply)
    assert shown == reply and check.verdict is Verdict.PASS
    for step, fed in zip(steps, range(4, len(reply) + 4, 4), strict=False):
        assert len(reply[:fed].split()) - len(step.split()) <= 3


def test_words_the_model_was_told_of_the_user_s_world_are_no_note() -> None:
    # The same run in a note and in what the user said: saying it back is an answer.
    notes = NOTES + "\nTamsin keeps bees on the allotment behind the old mill, remember"
    check = CopiedRun(notes, FACTS)
    reply = "Tamsin keeps bees on the allotment behind the old mill."
    assert streamed(check, reply)[0] == reply and check.verdict is Verdict.PASS


def test_after_as_many_re_asks_as_a_copy_gets_a_note_only_stops_the_reply() -> None:
    form = ReplyForm(willing=True, avoiding=("a", "b", "c"))
    seen = Seen("hi", NOTES, RecentReplies(), "", notes=NOTES, facts=FACTS)
    check = CopiedRun.for_step(form, seen)
    assert streamed(check, "You are Brain OS, the user's personal assistant.")[0] == ""
    assert check.verdict is Verdict.STOP


def test_words_compare_in_one_person() -> None:
    keys = [key for key, _ in run_words("I'm here for the user's plans; you're theirs.")]
    assert keys == ["you", "are", "here", "for", "plans", "you", "are", "theirs"]
    # "The user" is whom a reply calls "you"; a user of something is left out.
    keys = [key for key, _ in run_words("Ask the user, a keen map user, what they want.")]
    assert keys == ["ask", "you", "keen", "map", "what", "they", "want"]


def test_the_prompt_splits_into_notes_and_what_the_model_was_told() -> None:
    tick = HeartbeatTick(digest=("1. The plumber comes at ten tomorrow",), may_speak=True)
    messages = [
        {
            "role": "system",
            "content": 'Be brief. Such as: {"message": "Noted, I will keep it in mind."}\n'
            f"## Core memory\n{PERSONA}\nName: Tamsin",
        },
        {"role": "system", "content": f"{SUMMARY_HEAD}\nTamsin talked about her bees."},
        {"role": "system", "content": f"{MEMORIES_HEAD}:\n- (2026-05-01) Tamsin sold honey"},
        {"role": "system", "content": tick.prompt()},
        {"role": "system", "content": TaskFinished("t1", "Three notes on the bees.").prompt()},
        {"role": "user", "content": UserText("How are the hives?").prompt()},
        {"role": "assistant", "content": "Buzzing, I hope."},
    ]
    notes, facts = prompt_notes(messages, "Name: Tamsin")
    for note in ("Be brief.", PERSONA, "No one spoke. What changed", "If the user would want"):
        assert note in notes and note not in facts
    assert "(2026-05-01)" not in facts, "a memory's date is layout"
    for fact in (
        "Name: Tamsin",
        "Noted, I will keep it in mind.",
        "talked about her bees",
        "Tamsin sold honey",
        "The plumber comes at ten",
        "Three notes on the bees.",
        "How are the hives?",
    ):
        assert fact in facts
    assert "Buzzing, I hope." not in facts, "an earlier reply may not be copied"


def test_the_step_asks_again_when_the_reply_says_the_persona_back(stores: Stores) -> None:
    llm = ScriptedStream(
        say("You're Brain OS, the user's personal assistant on their computer."),
        say("Sure: so far I only know what you told me today."),
    )
    agent = agent_on(llm, stores)
    turn = agent.respond(UserText("Tell me a bit about yourself and me."))
    assert turn.reply == "Sure: so far I only know what you told me today."
    assert len(llm.schemas) == 2
    # The re-ask opens willingly, with none of the note's first words.
    assert "Sure" in str(llm.schemas[1]) and "You|" not in str(llm.schemas[1])


EARLIER = [
    "Lovely, I'm glad to hear that you're painting the shed this weekend!",
    "Tide tables help: a calm bay at dawn is a good place to start a swim.",
]


def test_an_earlier_reply_s_run_at_the_opening_is_left_to_the_opening_guard() -> None:
    check = CopiedRun(NOTES, FACTS, EARLIER)
    reply = "I'm glad to hear that you're taking the ferry to Arran."
    assert streamed(check, reply)[0] == reply and check.verdict is Verdict.PASS


def test_a_reply_that_would_be_a_cheer_alone_says_the_sentence_left_out_after_all() -> None:
    check = CopiedRun(NOTES, FACTS, EARLIER)
    reply = "Great! A calm bay at dawn is a good place to start a swim."
    assert streamed(check, reply)[0] == reply and check.verdict is Verdict.PASS


def test_a_note_that_may_begin_among_the_first_words_holds_them_with_it() -> None:
    check = CopiedRun(NOTES, FACTS)
    shown, _ = streamed(check, "I answer in plain words, as a friend would across the table.")
    assert shown == "" and check.verdict is Verdict.REASK


def test_a_later_sentence_carrying_an_earlier_phrase_is_left_out_and_the_reply_goes_on() -> None:
    check = CopiedRun(NOTES, FACTS, EARLIER)
    reply = (
        "Pack a warm hat. Mornings: a calm bay at dawn is a good place to start a swim. "
        "Take a thermos of tea too."
    )
    shown, _ = streamed(check, reply)
    assert check.verdict is Verdict.TRIM
    assert shown == "Pack a warm hat. Take a thermos of tea too."


def test_an_answer_owned_as_said_again_may_say_an_earlier_reply_s_words() -> None:
    check = CopiedRun(NOTES, FACTS, EARLIER)
    reply = "As I said, a calm bay at dawn is a good place to start a swim."
    assert streamed(check, reply)[0] == reply and check.verdict is Verdict.PASS


def test_an_owned_answer_that_says_a_note_back_is_not_left_as_its_lead_in_alone() -> None:
    check = CopiedRun(NOTES, FACTS, EARLIER)
    reply = "As I said, it rings in four minutes from now."
    shown, steps = streamed(check, reply)
    assert check.verdict is Verdict.REASK
    assert shown == "" and not any(steps), "nothing shown, not 'As I said,' alone"


def test_an_earlier_reply_s_words_that_the_user_said_too_are_no_copy() -> None:
    facts = FACTS + "\nI'm painting the shed this weekend with my brother"
    check = CopiedRun(NOTES, facts, ["Have fun painting the shed this weekend with your brother!"])
    reply = "You're painting the shed this weekend with your brother, right?"
    assert streamed(check, reply)[0] == reply and check.verdict is Verdict.PASS


@pytest.mark.parametrize(
    ("reply", "shown_after", "verdict"),
    [
        # The copy asked again for, after a willing word: nothing but the cheer would be left.
        ("Sure! I'm glad to hear that you're painting the shed.", "", Verdict.REASK),
        ("Sure! Take the early ferry, it is quieter.", None, Verdict.PASS),
        ("Of course.", None, Verdict.PASS),
    ],
)
def test_on_a_re_ask_a_cheer_is_never_all_that_is_left(
    reply: str, shown_after: str | None, verdict: Verdict
) -> None:
    check = CopiedRun(NOTES, FACTS, EARLIER, hold_cheer=True)
    shown, _ = streamed(check, reply)
    assert check.verdict is verdict
    assert shown == (reply if shown_after is None else shown_after)


@pytest.mark.parametrize(
    "tail",
    [
        "Core memory: human now reads: Name: Tamsin, bees on the allotment.",
        "- (2026-05-01) Tamsin sold honey at the market.",
        # A memory line cut short by its own mark: its date alone gives it away.
        "- (2026-05-01) Tamsin: Hi! Honey sells.",
        # Today's and yesterday's memories are shown with the day's name.
        "- (today) Tamsin sold honey at the market.",
        "- (yesterday) Tamsin: Hi! Honey sells.",
    ],
)
def test_the_prompt_s_layout_said_back_after_an_answer_is_left_out(tail: str) -> None:
    messages = [
        {"role": "system", "content": f"Be brief.\n## Core memory\n{PERSONA}"},
        {"role": "system", "content": "[core memory] human now reads:\nName: Tamsin, bees"},
        {"role": "system", "content": "Memories:\n- (2026-05-01) Tamsin sold honey at the market"},
        {"role": "user", "content": "Did I sell any honey?"},
    ]
    notes, facts = prompt_notes(messages, "Name: Tamsin, bees on the allotment")
    check = CopiedRun(notes, facts)
    shown, _ = streamed(check, f"Yes, you sold honey at the market. {tail}")
    kept = "Honey sells." if tail.endswith("Honey sells.") else ""
    assert shown == f"Yes, you sold honey at the market. {kept}" and check.verdict is Verdict.TRIM
    # Said without the layout, the same memory is an answer.
    again = CopiedRun(notes, facts)
    reply = "Yes. Tamsin sold honey at the market."
    assert streamed(again, reply)[0] == reply and again.verdict is Verdict.PASS


def test_a_later_sentence_copying_a_run_of_a_reply_in_the_window_is_left_out(
    stores: Stores,
) -> None:
    first = "Lovely, I'm glad to hear that you're painting the shed this weekend."
    llm = ScriptedStream(
        say(first),
        say("Bread, yum. I'm glad to hear that you're baking bread this weekend. Enjoy!"),
    )
    agent = agent_on(llm, stores)
    assert agent.respond(UserText("I'm painting the shed this weekend.")).reply == first
    turn = agent.respond(UserText("I'm baking bread this weekend too."))
    assert turn.reply == "Bread, yum. Enjoy!"


def test_a_reply_the_loop_check_would_leave_a_cheer_said_before_says_the_earlier_sentence() -> None:
    from assistant.agent.checks.loops import LoopStop

    earlier = "Tea is a lovely way to start the day."
    pieces = ("Great! ", "Tea is a lovely ", "way to start the day.")
    loops = LoopStop([earlier], openings=["great!"])
    shown = "".join(loops.feed(piece) for piece in pieces)
    assert shown + loops.flush() == f"Great! {earlier}", "the cheer alone is a copy too"
    new = LoopStop([earlier], openings=["lovely!"])
    shown = "".join(new.feed(piece) for piece in pieces)
    assert shown + new.flush() == "Great! " and new.dropped, "a new cheer stands alone"
    asked = LoopStop([earlier], openings=["lovely!"], asked=True)
    shown = "".join(asked.feed(piece) for piece in pieces)
    assert shown + asked.flush() == f"Great! {earlier}", "but not for an answer said again"
    longer = LoopStop([earlier])
    said = longer.feed("Great, black tea it is. ") + longer.feed(earlier + " ") + longer.flush()
    assert said == "Great, black tea it is. " and longer.dropped


def test_a_memory_of_what_the_model_said_is_no_fact_a_later_sentence_may_copy() -> None:
    said = "I am excited to see how the new hives do this spring."
    memories = f"Memories:\n- (2026-05-01) {ASSISTANT_SPEAKER}: Lovely. {said}"
    messages = [{"role": "system", "content": memories}]
    notes, facts = prompt_notes(messages, "")
    assert said not in facts
    check = CopiedRun(notes, facts, [f"Lovely. {said}"])
    shown, _ = streamed(check, f"Good news! The bees are back. {said}")
    assert shown == "Good news! The bees are back. " and check.verdict is Verdict.TRIM


def test_a_core_block_restated_after_the_summary_is_framed_as_a_note() -> None:
    human = "Name: Ines\nPartner: Tomas"
    summary = f"{SUMMARY_HEAD}\nInes talked about her garden."
    content = f"{summary}\n\n[core memory] human now reads:\n{human}"
    notes, facts = prompt_notes([{"role": "system", "content": content}], human)
    assert "garden" in facts and "now reads" not in facts and "now reads" in notes
    check = CopiedRun(notes, facts)
    shown, _ = streamed(check, "Lovely. human now reads: Name: Ines Partner: Tomas")
    assert "now reads" not in shown and check.verdict is not Verdict.PASS


def test_an_answer_held_to_say_what_was_told_may_say_it_as_an_earlier_reply_did() -> None:
    """Asked again what they told, the user gets it again: held to "You told me that ", the
    answer was stopped as a copy of the reply that said it first, and left at its lead."""
    seen = Seen("Where do I swim?", NOTES, RecentReplies(EARLIER), "", notes=NOTES, facts=FACTS)
    reply = (
        "You told me that you swim. Mornings: a calm bay at dawn is a good place to start a swim."
    )
    free = CopiedRun.for_step(ReplyForm(grounded=True), seen)
    assert streamed(free, reply)[0] != reply and free.verdict is not Verdict.PASS
    recalling = CopiedRun.for_step(ReplyForm(grounded=True, recalling=True), seen)
    assert streamed(recalling, reply)[0] == reply and recalling.verdict is Verdict.PASS
