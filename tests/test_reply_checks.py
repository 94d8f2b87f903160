"""The reply checks as one pipeline (assistant/agent/checks/): the order declared once, the
verdicts combined by one rule, a re-ask's form disarming the check that asked for it, and the
settings naming the checks that run."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from typing import Self, get_args

import pytest

from assistant.agent.checks.check import Check, Seen, Verdict
from assistant.agent.checks.pipeline import NAMES, ORDER, ReplyChecks
from assistant.agent.checks.recent import RecentReplies
from assistant.agent.checks.text import compared
from assistant.agent.events import UserText
from assistant.agent.reply_form import ReplyForm
from assistant.agent.step_request import COPY_NO_REPEAT, StepRequests
from assistant.agent.tools import TOOLS, Stores
from assistant.agent.turn import AgentConfig
from assistant.settings import ReplyCheck, Settings
from tests.agent_helpers import ScriptedStream, agent_on, say


class Scripted(Check):
    """A check whose verdict is set (or turns to a re-ask when flushed): it lets everything
    through, and gives up its label when flushed."""

    name = "scripted"

    def __init__(self, verdict: Verdict, label: str) -> None:
        self._verdict = verdict
        self.label = label
        self.flushed = False
        self.fed = ""

    @classmethod
    def for_step(cls, form: ReplyForm, seen: Seen) -> Self:
        return cls(Verdict.PASS, "")

    def feed(self, piece: str) -> str:
        self.fed += piece
        return "" if self._verdict is Verdict.REASK else piece

    def flush(self) -> str:
        self.flushed = True
        if self.label == "asks":
            self._verdict = Verdict.REASK
        return "" if self._verdict is Verdict.REASK else f"[{self.label}]"

    @property
    def verdict(self) -> Verdict:
        return self._verdict


@pytest.mark.parametrize("verdicts", list(itertools.product(Verdict, repeat=3)))
def test_verdicts_combine_by_one_rule_whatever_the_mix(verdicts: tuple[Verdict, ...]) -> None:
    checks = [Scripted(verdict, str(index)) for index, verdict in enumerate(verdicts)]
    pipeline = ReplyChecks(checks)
    reasks = [check for check in checks if check.verdict is Verdict.REASK]
    assert pipeline.halted == any(v in (Verdict.STOP, Verdict.REASK) for v in verdicts)
    # The first in the order asking again decides the form of the re-ask.
    assert pipeline.reask is (reasks[0] if reasks else None)
    assert pipeline.altered == any(v is not Verdict.PASS for v in verdicts)
    flushed = pipeline.flush()
    if reasks:  # asked again: nothing held is given up
        assert flushed == "" and not any(check.flushed for check in checks)
    else:  # a stop ends the reading, not the flushing; what each gives up passes those after
        assert flushed == "[0][1][2]"
        assert [check.fed for check in checks] == ["", "[0]", "[0][1]"]


@pytest.mark.parametrize("asking", [0, 1, 2])
def test_a_re_ask_found_while_flushing_ends_the_flush_there(asking: int) -> None:
    checks = [Scripted(Verdict.PASS, "asks" if i == asking else str(i)) for i in range(3)]
    pipeline = ReplyChecks(checks)
    flushed = pipeline.flush()
    assert pipeline.reask is checks[asking]
    assert [check.flushed for check in checks] == [i <= asking for i in range(3)]
    # What the checks before it gave up was sound, and is shown, as while streaming.
    assert flushed == "".join(f"[{i}]" for i in range(asking))


def test_the_order_is_declared_once_and_the_settings_name_the_same_checks() -> None:
    assert NAMES == (
        "grounding",
        "evasion",
        "asides",
        "opening",
        "restated",
        "runs",
        "diet",
        "loops",
        "perspective",
        "echo",
        "admission",
    )
    assert set(get_args(ReplyCheck)) == set(NAMES)
    assert Settings().agent.reply_checks == list(NAMES)
    assert AgentConfig().reply_checks == NAMES
    assert [kind.name for kind in ORDER] == list(NAMES)


def test_the_checks_setting_reads_a_comma_separated_flag() -> None:
    settings = Settings.model_validate({"agent": {"reply_checks": "opening, loops"}})
    assert settings.agent.reply_checks == ["opening", "loops"]


# What a reply about the user's food is compared with: the question, a prompt that knows of
# lentils and the user's name, a vegetarian diet, and one earlier reply.
SEEN = Seen(
    heard="What should I cook for my dinner tonight?",
    prompt="User: My name is Orla. I have red lentils and rice at home.",
    recent=RecentReplies(["Lovely, a quiet evening in sounds just right."]),
    human="Name: Orla\nDiet: vegetarian",
)
FORM = ReplyForm(grounded=True)

# Replies that each set off one check, and what the pipeline does with them.
REFUSAL = "I'm sorry, but I can't help with that. "
INVENTED = "Your neighbour Thaddeus grows lentils. "
MEAT = "You could make a chicken and rice bowl. "
LOOP = "Red lentils cook fast. " * 3
VOICE = "I have red lentils and rice at home. "
COPY = "Lovely, a quiet evening in sounds just right. "
PLAIN = "Red lentil soup with rice would be quick. "
ASIDE = "[shares a photo: a pot of lentil soup]"


def run(text: str, form: ReplyForm = FORM, enabled: tuple[str, ...] = NAMES) -> ReplyChecks:
    checks = ReplyChecks.for_step(form, SEEN, enabled)
    shown = ""
    for start in range(0, len(text), 5):
        shown += checks.feed(text[start : start + 5])
        if checks.halted:
            break
    checks.shown = shown + checks.flush()  # type: ignore[attr-defined]
    return checks


def shown(checks: ReplyChecks) -> str:
    return str(checks.shown).strip()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "asker", "form_change"),
    [
        (REFUSAL, "opening", {"willing": True}),
        (COPY, "opening", {"willing": True, "avoiding": (compared(COPY),)}),
        (INVENTED, "grounding", {"admitting": True}),
        (MEAT, "diet", {"leaving_out": "chicken"}),
        # Two at once: the first in the order decides.
        (INVENTED + MEAT, "grounding", {"admitting": True}),
        (REFUSAL + MEAT, "opening", {"willing": True}),
        (MEAT.replace("rice", "Thaddeus's rice"), "grounding", {"admitting": True}),
    ],
)
def test_a_reply_is_asked_again_by_the_first_check_that_objects(
    text: str, asker: str, form_change: dict[str, object]
) -> None:
    checks = run(text)
    assert checks.reask is not None and checks.reask.name == asker
    assert checks.reask.reasked(FORM) == replace(FORM, **form_change)  # type: ignore[arg-type]
    assert shown(checks) == ""


@pytest.mark.parametrize(
    ("text", "verdicts", "expected"),
    [
        (PLAIN, {}, PLAIN),
        (VOICE, {"perspective": Verdict.TRIM}, "You have red lentils and rice at home."),
        (LOOP, {"loops": Verdict.STOP}, "Red lentils cook fast."),
        (PLAIN + INVENTED, {"grounding": Verdict.STOP}, PLAIN),
        (PLAIN + VOICE + LOOP, {"perspective": Verdict.TRIM, "loops": Verdict.STOP}, None),
        (PLAIN + COPY, {"loops": Verdict.TRIM}, PLAIN),
    ],
)
def test_a_reply_shown_in_part_keeps_what_every_check_let_through(
    text: str, verdicts: dict[str, Verdict], expected: str | None
) -> None:
    checks = run(text)
    assert checks.reask is None
    assert {c.name: c.verdict for c in checks.checks if c.verdict is not Verdict.PASS} == verdicts
    assert checks.altered == bool(verdicts)
    if expected is not None:
        assert shown(checks) == expected.strip()
    else:
        assert shown(checks).startswith(PLAIN + "You have red lentils")
        assert shown(checks).count("Red lentils cook fast.") == 1


@pytest.mark.parametrize(
    ("text", "asker"), [(REFUSAL, "opening"), (INVENTED, "grounding"), (MEAT, "diet")]
)
def test_the_re_ask_s_form_disarms_the_check_that_asked(text: str, asker: str) -> None:
    first = run(text)
    assert first.reask is not None and first.reask.name == asker
    again = run(text, first.reask.reasked(FORM))
    assert again.reask is None


@pytest.mark.parametrize(
    ("pieces", "said"),
    [
        (["Great! [sends a ", "picture of a dog] Dogs are lovely."], "Great! Dogs are lovely."),
        (["[Your name]", " will be there at 3."], "will be there at 3."),
        (["See [the guide](https", "://example.org) first."], None),
        (["Done. [note to self: ask again"], "Done. "),
        (["Lists [1] and [2] differ."], "Lists and differ."),
    ],
)
def test_a_bracketed_aside_is_left_out_as_it_streams(pieces: list[str], said: str | None) -> None:
    from assistant.agent.checks.asides import AsideDrop

    check = AsideDrop.for_step(FORM, SEEN)
    shown = "".join(check.feed(piece) for piece in pieces) + check.flush()
    assert shown == (said if said is not None else "".join(pieces))
    assert check.verdict is (Verdict.PASS if said is None else Verdict.TRIM)


def test_an_aside_is_left_out_of_small_talk_and_stops_an_answer_about_the_user() -> None:
    chat = run(PLAIN + ASIDE + " Enjoy it!", ReplyForm())
    assert shown(chat) == PLAIN + "Enjoy it!"
    assert [c.name for c in chat.checks if c.verdict is not Verdict.PASS] == ["asides"]
    # Grounding looks first: in an answer about what the user told, a bracket may be a
    # template's blank, and the answer stops before it.
    told = run(PLAIN + ASIDE + " Enjoy it!")
    assert shown(told) == PLAIN.strip() and told.checks[0].verdict is Verdict.STOP


def test_a_check_left_out_of_the_settings_does_not_run() -> None:
    assert run(REFUSAL, enabled=("grounding", "diet", "loops")).reask is None
    assert run(MEAT, enabled=("opening",)).reask is None
    assert shown(run(VOICE, enabled=("loops",))) == VOICE.strip()


def test_a_heartbeat_s_fixed_opening_outranks_the_willing_opening(stores: Stores) -> None:
    requests = StepRequests(ScriptedStream(), TOOLS, 256, 0.3, design="plain")
    opening = r"^Just a reminder: [^\"]*$"
    form = ReplyForm("send_message", tick=True, speak=True, opening=opening, willing=True)
    request, _ = requests.request([{"role": "user", "content": "tick"}], None, form)
    held = request.options  # the request's options, as JSON
    assert json.dumps(opening)[1:-1] in held and "Of course" not in held
    # A heartbeat's message keeps its schema in the plain design: the schema holds the opening.
    assert not requests.plain(form, None)


def test_the_step_asks_again_in_the_form_the_check_gives(stores: Stores) -> None:
    llm = ScriptedStream(say(REFUSAL.strip()), say("Sure, here is a short rhyme about rain."))
    agent = agent_on(llm, stores)
    turn = agent.respond(UserText("Write me a short rhyme about rain."))
    assert turn.reply == "Sure, here is a short rhyme about rain."
    assert len(llm.schemas) == 2
    assert "Sure" in str(llm.schemas[1])


def test_a_copy_is_asked_again_without_its_first_word_and_repeats_made_unlikely(
    stores: Stores,
) -> None:
    from tests.test_plain_replies import plain_agent

    copy = "Yes, that sounds like a lovely plan."
    llm = ScriptedStream(copy, copy, "Sure, a walk by the canal it is.")
    agent = plain_agent(llm, stores)
    agent.respond(UserText("I might go for a walk later."))
    turn = agent.respond(UserText("Probably by the canal, it's quiet there."))
    assert turn.reply == "Sure, a walk by the canal it is."
    assert llm.no_repeats == [None, None, COPY_NO_REPEAT]
    again = llm.grammars[2]
    assert again is not None and '"Sure"' in again and '"Yes"' not in again
    assert "rest ::= ([ \\n,.!?;:'-]" in again  # a whole word: "Once", never "Oncence"
    # The JSON designs' schema leaves the copy's first word out the same way.
    requests = StepRequests(ScriptedStream(), TOOLS, 256, 0.3)
    form = ReplyForm("send_message", willing=True, avoiding=(copy.lower(),))
    request, _ = requests.request([{"role": "user", "content": "hi"}], None, form)
    assert "Sure" in request.options and "Yes|" not in request.options
    assert '"no_repeat": 0.8' in request.options


def test_a_reply_may_not_open_with_a_longer_sentence_of_a_recent_one() -> None:
    earlier = "Oh, lovely, a new kitchen at last! The fitter comes on Tuesday morning."
    seen = replace(SEEN, recent=RecentReplies([earlier]), heard="When does the fitter come?")
    copied = ReplyChecks.for_step(ReplyForm(), seen)
    assert copied.feed("The fitter comes on Tuesday morning. ") == ""
    assert copied.reask is not None and copied.reask.name == "opening"
    form = copied.reask.reasked(ReplyForm())
    assert form.avoiding == ("the fitter comes on tuesday morning ",)
    # A short sentence may come again, and a longer one that only begins alike goes through.
    assert ReplyChecks.for_step(ReplyForm(), seen).feed("Tuesday morning. ") == "Tuesday morning. "
    fresh = ReplyChecks.for_step(ReplyForm(), seen)
    said = fresh.feed("The fitter comes on Tuesday, around nine. ") + fresh.flush()
    assert said == "The fitter comes on Tuesday, around nine. " and fresh.reask is None


def test_a_short_greeting_and_the_words_after_it_are_not_a_template() -> None:
    earlier = "Hey, Marguerite! You're Marguerite, you keep bees on the roof."
    seen = replace(SEEN, recent=RecentReplies([earlier]), heard="My van broke down again.")
    template = run_in(seen, ReplyForm(), "Hey, Marguerite! You're Marguerite, your van broke. ")
    assert template.reask is not None and template.reask.name == "opening"
    form = template.reask.reasked(ReplyForm())
    assert form.avoiding == ("hey marguerite you're marguerite ",)
    # The greeting alone, or with other words after it, is no template.
    assert run_in(seen, ReplyForm(), "Hey, Marguerite! Sorry about the van. ").reask is None
    assert run_in(seen, ReplyForm(), "Hey, Marguerite! ").reask is None


def test_not_knowing_what_the_user_may_eat_is_asked_again_when_their_diet_is_known() -> None:
    seen = replace(SEEN, heard="Which foods should I stay away from?")
    unknowing = run_in(seen, FORM, "I'm sorry, but I don't know what you mean. ")
    assert unknowing.reask is not None and unknowing.reask.name == "opening"
    answered = run_in(seen, FORM, "You don't eat meat or fish. ")
    assert answered.reask is None
    # With no diet line, or asked of something else, not knowing stands.
    assert run_in(replace(seen, human="Name: Orla"), FORM, "I don't know. ").reask is None
    other = replace(SEEN, heard="Which train do I take on Monday?")
    assert run_in(other, FORM, "I don't know. ").reask is None


def test_a_re_ask_that_copies_again_is_asked_again_then_stands() -> None:
    from assistant.agent.checks.opening import COPY_REASKS

    seen = replace(SEEN, recent=RecentReplies(["Great news!", "Lovely news!", COPY.strip()]))
    once = ReplyForm(willing=True, avoiding=(COPY.strip().lower(),))
    again = run_in(seen, once, "Great news! Tell me more. ")
    assert again.reask is not None and again.reask.name == "opening"
    twice = again.reask.reasked(once)
    assert twice.avoiding == (COPY.strip().lower(), "great news ")
    form = twice
    for _ in range(COPY_REASKS - len(twice.avoiding)):
        checks = run_in(seen, form, "Lovely news! Tell me more. ")
        assert checks.reask is not None
        form = checks.reask.reasked(form)
    # Asked COPY_REASKS times after copies, the last reply stands. A refusal's re-ask is held
    # to no copy either (it has avoided none yet), but not to no refusal: its grammar keeps the
    # refusal out, and a second one stands. Sympathy met on the re-ask ("Oh no") stands too.
    assert len(form.avoiding) == COPY_REASKS
    assert run_in(seen, form, "Great news! Tell me more. ").reask is None
    assert run_in(seen, ReplyForm(willing=True), "Great news! Tell me more. ").reask
    assert run_in(seen, ReplyForm(willing=True), "I can't help with that. ").reask is None
    assert run_in(seen, once, "Oh no, that is a shame. ").reask is None


def run_in(seen: Seen, form: ReplyForm, text: str) -> ReplyChecks:
    checks = ReplyChecks.for_step(form, seen)
    checks.feed(text)
    checks.flush()
    return checks
