"""A reply never opens by copying an earlier one (agent/checks/opening.py, recent.py): held
back like a refusal and asked for once more."""

from __future__ import annotations

import pytest

from assistant.agent.agent import Agent
from assistant.agent.checks.opening import OpeningGuard, willing_openings
from assistant.agent.checks.recent import RECENT, RecentReplies, opening
from assistant.agent.context import ContextConfig, ContextWindow
from assistant.agent.events import UserText
from assistant.agent.instructions import instructions
from assistant.agent.tools import Stores
from assistant.agent.turn import AgentConfig
from tests.agent_helpers import ScriptedStream, say

JOB = "I'm so happy! A new job, how exciting."
LUTON = "Good for you, Luton is a great city! I'll remember that."


def test_the_first_sentences_of_a_reply_are_its_opening() -> None:
    assert opening(LUTON) == "Good for you, Luton is a great city!"
    assert opening(JOB) == JOB, "'I'm so happy!' alone is too short to tell"
    assert opening("Dr. Ruiz is at 3 p.m. on Friday") == "Dr. Ruiz is at 3 p.m."
    assert opening("No end at all") == "No end at all"
    replies = RecentReplies([LUTON, "Okay.", "Good for you, luton is a  great city!"])
    assert replies.openings() == ("good for you, luton is a great city!",), "one word goes"
    replies = RecentReplies(f"Reply number {n} to you." for n in range(RECENT + 5))
    assert len(replies.openings()) == RECENT and "reply number 0 to you." not in replies.openings()


def test_the_guard_holds_a_copy_and_lets_a_new_reply_through_once_it_parts() -> None:
    openings = RecentReplies([LUTON]).openings()
    guard = OpeningGuard(unwanted=openings)
    assert guard.feed("Good for you, Luton is a great city!") == "" and guard.refused
    guard = OpeningGuard(unwanted=openings)
    assert guard.feed("Good for you") == ""
    assert guard.feed(", Sid!") == "Good for you, Sid!", "released the moment it parts"


def test_a_reply_copying_an_earlier_one_is_asked_again(stores: Stores) -> None:
    context = ContextWindow(instructions(), stores.core, ContextConfig(window_tokens=4096))
    llm = ScriptedStream(
        say(JOB), say(JOB + " Water them weekly."), say("Sure: a list with watering days.")
    )
    agent = Agent(llm, stores, context, AgentConfig())
    assert agent.respond(UserText("I got the job at the studio!")).reply == JOB
    pieces: list[str] = []
    turn = agent.respond(UserText("How do I keep track of houseplants?"), on_text=pieces.append)
    assert turn.reply == "Sure: a list with watering days." == "".join(pieces)
    assert len(llm.calls) == 3, "the copy was neither shown nor kept, and asked again once"


def test_a_copy_with_other_marks_between_its_words_is_still_a_copy() -> None:
    from assistant.agent.checks.loops import LoopStop

    replies = RecentReplies(
        ["Okay. I'll water the ferns on Sunday at noon: the big pot", "Got it!"]
    )
    copies = replies.openings() + replies.long_sentences()
    for copy in (
        "Okay, I'll water the ferns on Sunday at noon, the big pot.",
        "Okay I'll water the ferns on Sunday at noon - the big pot",
    ):
        guard = OpeningGuard(copies=copies)
        assert guard.feed(copy) + guard.flush() == "" and guard.refused, copy
    whole = OpeningGuard(copies=copies)
    assert whole.feed("Got it, the ferns.") == "" and whole.refused
    apart = OpeningGuard(copies=copies)
    assert apart.feed("Got itemised lists?") + apart.flush() == "Got itemised lists?"
    loop = LoopStop(["Your ferns want water on Sunday at noon."])
    shown = loop.feed("The ferns look well. Your ferns want water, on Sunday at noon! ")
    assert shown + loop.flush() == "The ferns look well. " and loop.dropped


def test_a_re_ask_after_a_refusal_is_held_to_no_copy_either() -> None:
    from assistant.agent.checks.check import Seen, Verdict
    from assistant.agent.reply_form import ReplyForm

    earlier = "Okay. I'll water the ferns on Sunday at noon."
    seen = Seen("The plumber comes on Friday now.", "", RecentReplies([earlier]), "")
    refused = OpeningGuard.for_step(ReplyForm(), seen)
    assert refused.feed("I'm sorry, but I can't assist with that.") == ""
    form = refused.reasked(ReplyForm())
    assert form.willing and form.avoiding == (), "a refusal's words are not avoided"
    again = OpeningGuard.for_step(form, seen)
    assert again.feed("Okay, I'll water the ferns on Sunday at noon.") + again.flush() == ""
    assert again.verdict is Verdict.REASK


def test_a_reply_opening_with_the_users_own_words_is_asked_again() -> None:
    from assistant.agent.checks.opening import OpeningGuard, echo_of

    heard = "The boiler man is coming on Thursday morning."
    guard = OpeningGuard(unwanted=echo_of(heard))
    assert guard.feed("The boiler man is coming on Thursday morning.") == ""
    assert guard.refused
    fine = OpeningGuard(unwanted=echo_of(heard))
    assert fine.feed("Good, the boiler will be sorted.") + fine.flush() != ""
    assert echo_of("Thanks!") == ()


def test_a_later_sentence_of_an_earlier_reply_is_dropped_but_not_the_first() -> None:
    from assistant.agent.checks.loops import LoopStop
    from assistant.agent.checks.recent import RecentReplies

    earlier = RecentReplies(["Lovely news. What will you plant there next?"]).sentences()
    loop = LoopStop(earlier)
    shown = loop.feed("The roses sound great. What will you plant there next? ") + loop.flush()
    assert shown == "The roses sound great. " and loop.dropped
    first = LoopStop(earlier)
    said = first.feed("What will you plant there next? I'd try tulips.") + first.flush()
    assert said == "What will you plant there next? I'd try tulips."


def test_an_earlier_replys_last_words_with_no_full_stop_are_not_said_again() -> None:
    from assistant.agent.checks.loops import LoopStop
    from assistant.agent.checks.recent import RecentReplies

    earlier = RecentReplies(["Nice! (picture of a cat asleep on a warm laptop)"]).sentences()
    assert earlier[-1] == "(picture of a cat asleep on a warm laptop)"
    loop = LoopStop(earlier)
    shown = loop.feed("Lovely, a sleepy cat. (picture of a cat asleep on a warm laptop)")
    assert shown + loop.flush() == "Lovely, a sleepy cat. " and loop.dropped


def test_a_short_reply_is_not_said_again_whole_but_one_word_may_be() -> None:
    from assistant.agent.checks.recent import RecentReplies

    replies = RecentReplies(["See you, Ilse.", "Okay."])
    assert "see you, ilse." in replies.openings()
    assert "okay." not in replies.openings()


def test_a_question_asked_again_gets_its_answer_again_owned_as_said_before() -> None:
    from assistant.agent.checks.check import Seen, Verdict
    from assistant.agent.reply_form import ReplyForm

    replies = RecentReplies()
    question, answer = "Where did I leave the ladder?", "You left the ladder in the shed."
    replies.hear(question)
    replies.add(answer)
    for n in range(RECENT + 2):  # long gone from the recent replies
        replies.hear(f"Note number {n}.")
        replies.add(f"Noted, number {n} is written down.")

    def reply(heard: str, text: str) -> tuple[str, Verdict]:
        guard = OpeningGuard.for_step(ReplyForm(), Seen(heard, "", replies, ""))
        shown = "".join(guard.feed(text[i : i + 3]) for i in range(0, len(text), 3))
        shown += guard.flush()
        replies.hear(heard)
        replies.add(shown)
        return shown, guard.verdict

    assert reply(question, answer) == ("As I said, you left the ladder in the shed.", Verdict.TRIM)
    # The model may copy the owned answer itself; the next lead-in replaces the old one.
    said = reply(question, "As I said, you left the ladder in the shed. It's dry there.")
    assert said == ("Like I said, you left the ladder in the shed. It's dry there.", Verdict.TRIM)
    # A new answer to the same question, or the old answer to another one, is as it was.
    assert reply(question, "It is in the garage now.") == ("It is in the garage now.", Verdict.PASS)
    other = "Where did I leave the wheelbarrow?"
    assert reply(other, answer) == (answer, Verdict.PASS)
    # A statement said again is no question: its copied answer is asked for again.
    replies.hear("My ladder is blue.")
    replies.add("A blue ladder is easy to spot in the garden.")
    guard = OpeningGuard.for_step(ReplyForm(), Seen("My ladder is blue.", "", replies, ""))
    assert guard.feed("A blue ladder is easy to spot in the garden.") == ""
    assert guard.verdict is Verdict.REASK


def test_a_name_keeps_its_capital_after_the_lead_in() -> None:
    from assistant.agent.checks.opening import said_again

    assert said_again("Mirela is your landlady.", 1) == "As I said, Mirela is your landlady."
    assert said_again("Your landlady is Mirela.", 2) == "Like I said, your landlady is Mirela."
    assert said_again("Your landlady is Mirela.", 9).startswith("As I told you before, your")


def test_an_answer_about_the_user_that_says_an_earlier_fact_again_owns_it() -> None:
    from assistant.agent.checks.check import Seen, Verdict
    from assistant.agent.reply_form import ReplyForm

    replies = RecentReplies(["Lovely! Your niece Wanda lives in Gdynia.", "Noted."])
    seen = Seen("What's my niece called?", "", replies, "")
    guard = OpeningGuard.for_step(ReplyForm(grounded=True), seen)
    shown = guard.feed("Your niece Wanda lives in Gdynia. She") + guard.flush()
    assert shown == "As I said, your niece Wanda lives in Gdynia. She"
    assert guard.verdict is Verdict.TRIM
    # Not an answer about the user: the copy is asked for again.
    chat = OpeningGuard.for_step(ReplyForm(), Seen("Any news?", "", replies, ""))
    assert chat.feed("Your niece Wanda lives in Gdynia.") == "" and chat.verdict is Verdict.REASK


@pytest.mark.parametrize("grounded", [False, True])
def test_news_about_what_an_answer_said_ends_its_saying_again(grounded: bool) -> None:
    """Told of a move, the old answer to where someone lives is a copy, not owned."""
    from assistant.agent.checks.check import Seen, Verdict
    from assistant.agent.reply_form import ReplyForm

    replies = RecentReplies()
    question, answer = "Where does my cousin Edvard live?", "Your cousin Edvard lives in Bergen."
    replies.hear(question)
    replies.add(answer)
    replies.hear("I'm baking bread tonight.")  # news about something else
    replies.add("Enjoy the baking!")
    assert answer.lower() in replies.ownable()
    replies.hear("Edvard moved to Tromsø last month.")
    replies.add("Noted, a big move for him.")
    assert answer.lower() not in replies.ownable()
    guard = OpeningGuard.for_step(ReplyForm(grounded=grounded), Seen(question, "", replies, ""))
    assert guard.feed(answer) + guard.flush() == ""
    assert guard.verdict is Verdict.REASK


def test_an_owned_answer_keeps_the_earlier_sentences_it_says_again() -> None:
    from assistant.agent.checks.loops import LoopStop

    earlier = RecentReplies(["Right! Your choir sings at noon in the old mill."]).sentences()
    loop = LoopStop(earlier)
    text = "As I said, right! Your choir sings at noon in the old mill. "
    assert loop.feed(text) + loop.flush() == text and not loop.dropped
    plain = LoopStop(earlier)
    said = plain.feed("Right, the choir! Your choir sings at noon in the old mill. ")
    assert said + plain.flush() == "Right, the choir! " and plain.dropped


def test_a_reply_speaking_of_the_user_in_the_third_person_is_asked_again() -> None:
    from assistant.agent.checks.check import Seen, Verdict
    from assistant.agent.reply_form import ReplyForm

    guard = OpeningGuard.for_step(ReplyForm(), Seen("Where is my bike?", "", RecentReplies(), ""))
    assert guard.feed("The user said the bike is in the hall.") == ""
    assert guard.verdict is Verdict.REASK


@pytest.mark.parametrize(
    ("heard", "asked_for"),
    [
        ("My kiln cracked overnight.", False),
        ("When is the pottery fair?", False),
        ("Tell me something funny about kilns.", True),
        ("Got any jokes?", True),
    ],
)
def test_a_joke_opens_a_reply_only_where_the_user_asked_for_one(
    heard: str, asked_for: bool
) -> None:
    from assistant.agent.checks.check import Seen, Verdict
    from assistant.agent.reply_form import ReplyForm

    guard = OpeningGuard.for_step(ReplyForm(), Seen(heard, "", RecentReplies(), ""))
    shown = guard.feed("Sure, here's a joke about kilns: they get fired a lot.") + guard.flush()
    assert (guard.verdict is Verdict.PASS) is asked_for and bool(shown) is asked_for
    if not asked_for:
        form = guard.reasked(ReplyForm())
        assert "Sure" not in willing_openings(form.avoiding), "the re-ask opens otherwise"


def test_an_earlier_answer_turned_to_the_user_is_the_same_answer_in_the_first_person() -> None:
    from assistant.agent.checks.check import Seen, Verdict
    from assistant.agent.checks.pipeline import ReplyChecks
    from assistant.agent.reply_form import ReplyForm

    # Shown turned ("Your ..."), the earlier answer came from the model as "My ...".
    replies = RecentReplies(["Your uncle Bertil keeps bees in Visby.", "Noted."])
    seen = Seen("Where does Bertil keep his bees?", "uncle Bertil bees Visby", replies, "")
    checks = ReplyChecks.for_step(ReplyForm(grounded=True), seen)
    text = "My uncle Bertil keeps bees in Visby."
    shown = "".join(checks.feed(text[i : i + 2]) for i in range(0, len(text), 2)) + checks.flush()
    assert shown == "As I said, your uncle Bertil keeps bees in Visby."
    assert {c.name: c.verdict for c in checks.checks}["opening"] is Verdict.TRIM


def test_a_long_answer_said_again_is_owned_after_a_few_words_not_held_to_its_end() -> None:
    from assistant.agent.checks.check import Seen
    from assistant.agent.checks.opening import OWN_AFTER
    from assistant.agent.reply_form import ReplyForm

    question = "What should I take on a canoe trip?"
    answer = "For a canoe trip take a dry bag, a map, sun cream, a whistle, snacks and water."
    replies = RecentReplies()
    replies.hear(question)
    replies.add(answer)
    guard = OpeningGuard.for_step(ReplyForm(), Seen(question, "", replies, ""))
    words = answer.split()
    assert guard.feed(" ".join(words[:OWN_AFTER]) + " ") == ""
    shown = guard.feed(words[OWN_AFTER] + " ")
    assert shown == "As I said, " + " ".join(words[: OWN_AFTER + 1]).lower() + " "
    assert guard.feed("and a hat.") == "and a hat."


def test_an_answer_saying_it_does_not_know_who_the_user_told_of_is_asked_again() -> None:
    from assistant.agent.checks.check import Seen, Verdict
    from assistant.agent.reply_form import ReplyForm

    said = ("My landlady is called Mirela.", "The boiler broke again.", "Who is Mirela?")
    seen = Seen("Who is Mirela?", "", RecentReplies(), "", said)
    guard = OpeningGuard.for_step(ReplyForm(grounded=True), seen)
    assert guard.feed("I don't know who Mirela is.") == "" and guard.verdict is Verdict.REASK
    # Never told, or already held to admitting it: "I don't know" stands.
    for form, asked in (
        (ReplyForm(grounded=True), "Who is Bogdana?"),
        (ReplyForm(grounded=True, admitting=True), "Who is Mirela?"),
    ):
        guard = OpeningGuard.for_step(form, Seen(asked, "", RecentReplies(), "", said))
        text = "I don't know who she is."
        assert guard.feed(text) + guard.flush() == text and guard.verdict is Verdict.PASS


def test_a_request_to_recall_asked_again_gets_its_answer_again_owned() -> None:
    """A request to be told is a question: its same answer the second time is owned, not a
    copy asked again (asked again, the 0.5B model went round to the fallback line)."""
    from assistant.agent.checks.check import Seen, Verdict
    from assistant.agent.reply_form import ReplyForm

    replies = RecentReplies()
    asked = "Remind me what I told you about my aunt."
    answer = "You told me that your aunt Berthe keeps bees in Vichy."
    replies.hear(asked)
    replies.add(answer)
    replies.hear("I bought a new kettle.")
    replies.add("A new kettle is a fine thing to have.")
    guard = OpeningGuard.for_step(ReplyForm(grounded=True), Seen(asked, "", replies, ""))
    shown = "".join(guard.feed(answer[i : i + 3]) for i in range(0, len(answer), 3))
    assert (
        shown + guard.flush() == "As I said, you told me that your aunt Berthe keeps bees in Vichy."
    )
    assert guard.verdict is Verdict.TRIM
