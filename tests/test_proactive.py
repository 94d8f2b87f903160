"""The heartbeat's look at the user's world (assistant/proactive): intentions kept on disk,
the digest of what changed (nothing new is an empty digest), the dots connected by code, the
rules for speaking first, and the agent's choices at a heartbeat (real memory store and
embedder; the agent's LLM is scripted)."""

from __future__ import annotations

import json
import re
from datetime import datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from assistant.agent.agent import Agent
from assistant.agent.context import ContextConfig, ContextWindow
from assistant.agent.events import HeartbeatTick, UserText
from assistant.agent.instructions import instructions
from assistant.agent.tools import TOOLS, Stores
from assistant.agent.turn import AgentConfig, Turn
from assistant.proactive.agent_tools import heartbeat_tools
from assistant.proactive.digest import Digest, Item
from assistant.proactive.dots import Dots
from assistant.proactive.gate import GateRules, ProactiveGate, asks_for_quiet
from assistant.proactive.intentions import IntentionError, IntentionStore
from assistant.proactive.look import Look
from assistant.proactive.watch import Watch
from assistant.service.session import REMINDED_WITHIN
from assistant.tasks.reminders import ReminderStore
from assistant.tasks.store import TaskStore
from memory.stream import MemoryStream
from tests.agent_helpers import ScriptedStream, action, say
from tests.memory_helpers import Clock
from tests.test_agent import tools_allowed

LISBON = ZoneInfo("Europe/Lisbon")
# A Friday afternoon, in the user's zone.
FRIDAY = datetime(2026, 11, 27, 15, 0, tzinfo=LISBON)


@pytest.fixture
def clock() -> Clock:
    return Clock(FRIDAY)


def watch_on(stream: MemoryStream, folder: Path, clock: Clock) -> Watch:
    reminders = ReminderStore(folder / "reminders.json")
    return Watch(
        stream,
        reminders,
        TaskStore(folder / "tasks"),
        IntentionStore(folder / "intentions.json"),
        Dots(stream, None, lambda when: reminders.set_before(when, REMINDED_WITHIN)),
        folder / "heartbeat.json",
        clock,
    )


# Intentions


def test_an_intention_comes_back_once_when_due_and_after_a_restart(
    tmp_path: Path, clock: Clock
) -> None:
    store = IntentionStore(tmp_path / "intentions.json")
    kept = store.add("Ask how  Malin's recital went", FRIDAY + timedelta(days=1, hours=3))
    assert kept.text == "Ask how Malin's recital went" and store.due(FRIDAY) == []
    reopened = IntentionStore(tmp_path / "intentions.json")  # the app restarted
    later = FRIDAY + timedelta(days=2)
    assert [i.id for i in reopened.due(later)] == [kept.id]
    reopened.mark_surfaced({kept.id}, later)
    assert IntentionStore(tmp_path / "intentions.json").due(later) == []
    moved = reopened.edit(kept.id, due_at=later + timedelta(days=1))
    assert moved.surfaced_at is None, "a time moved comes back again"
    assert reopened.settle(kept.id, "done").status == "done"
    assert reopened.pending() == []
    with pytest.raises(IntentionError):
        reopened.add("   ", later)


def test_an_unreadable_intentions_file_is_moved_aside_and_said(tmp_path: Path) -> None:
    path = tmp_path / "intentions.json"
    path.write_bytes(b"\xff\xfe not json")
    store = IntentionStore(path)
    assert store.all() == [] and store.problem is not None and "moved to" in store.problem
    assert (tmp_path / "intentions.json.unreadable").read_bytes().startswith(b"\xff")


# The digest


def test_nothing_new_is_an_empty_digest(stream: MemoryStream, tmp_path: Path, clock: Clock) -> None:
    stream.add("User: I like green tea.", source="user")
    watch = watch_on(stream, tmp_path, clock)
    assert watch.look().empty, "the first look ever: what was there before is not news"
    clock.advance(minutes=5)
    assert watch.look().empty
    stream.add("Brain OS: Noted, green tea.", source="assistant")
    clock.advance(minutes=5)
    assert watch.look().empty, "the assistant's own words are not news"


def test_new_memories_and_due_intentions_are_given_once(
    stream: MemoryStream, tmp_path: Path, clock: Clock
) -> None:
    watch = watch_on(stream, tmp_path, clock)
    watch.look()
    clock.advance(minutes=1)
    stream.add("User: My sister Brigida lives in Parma.", source="user")
    watch.intentions.add("Ask Brigida's news", FRIDAY + timedelta(minutes=3))
    clock.advance(minutes=5)
    digest = watch.look()
    kinds = {item.kind: item for item in digest.items}
    assert set(kinds) == {"memory", "intention"}
    assert kinds["intention"].actionable and not kinds["memory"].actionable
    assert digest.lines()[0] == "1. (your intention, due now) Ask Brigida's news"
    watch.given(digest)
    clock.advance(minutes=5)
    assert watch.look().empty
    # After a restart, nothing given is given again.
    assert watch_on(stream, tmp_path, clock).look().empty


def test_a_digest_not_given_comes_back(stream: MemoryStream, tmp_path: Path, clock: Clock) -> None:
    watch = watch_on(stream, tmp_path, clock)
    watch.look()
    clock.advance(minutes=1)
    stream.add("User: The boiler is making a noise.", source="user")
    clock.advance(minutes=1)
    assert not watch.look().empty
    # The user cut in: the turn ended before the digest was taken in.
    assert [i.kind for i in watch.look().items] == ["memory"]


# Connecting the dots


def test_two_events_at_the_same_time_are_a_clash(
    stream: MemoryStream, tmp_path: Path, clock: Clock
) -> None:
    watch = watch_on(stream, tmp_path, clock)
    watch.look()
    stream.add("User: I have the dentist on Tuesday at 3 pm.", source="user")
    clock.advance(minutes=2)
    stream.add("User: Silja's piano recital is on Tuesday at 3 pm.", source="user")
    clock.advance(minutes=2)
    clashes = [i for i in watch.look().items if i.kind == "clash"]
    assert len(clashes) == 1 and clashes[0].actionable
    assert "dentist" in clashes[0].text and "recital" in clashes[0].text


def test_one_event_said_twice_is_no_clash(
    stream: MemoryStream, tmp_path: Path, clock: Clock
) -> None:
    watch = watch_on(stream, tmp_path, clock)
    watch.look()
    stream.add("User: The dentist is on Tuesday at 3 pm.", source="user")
    stream.add("User: Dentist appointment Tuesday at 3 pm.", source="user")
    clock.advance(minutes=2)
    assert not [i for i in watch.look().items if i.kind == "clash"]


def test_an_event_told_earlier_is_coming_up_and_then_asked_about(
    stream: MemoryStream, tmp_path: Path, clock: Clock
) -> None:
    stream.add("User: Malin's recital is on Saturday at 6 pm.", source="user")
    watch = watch_on(stream, tmp_path, clock)
    watch.look()
    clock.advance(hours=1)
    assert not [i for i in watch.look().items if i.kind == "upcoming"], "just told"
    clock.now = datetime(2026, 11, 28, 9, 0, tzinfo=LISBON)  # Saturday morning
    upcoming = watch.look()
    assert [i.kind for i in upcoming.items] == ["upcoming"]
    assert "tomorrow" not in upcoming.items[0].text and "today at 18:00" in upcoming.items[0].text
    watch.given(upcoming)
    clock.now = datetime(2026, 11, 29, 10, 0, tzinfo=LISBON)  # Sunday morning
    passed = watch.look()
    assert [i.kind for i in passed.items] == ["passed"] and passed.items[0].actionable


def test_an_event_a_reminder_covers_is_not_brought_up(
    stream: MemoryStream, tmp_path: Path, clock: Clock
) -> None:
    stream.add("User: Malin's recital is on Saturday at 6 pm.", source="user")
    watch = watch_on(stream, tmp_path, clock)
    watch.look()
    watch.reminders.add("leave for Malin's recital", datetime(2026, 11, 28, 17, 15, tzinfo=LISBON))
    clock.now = datetime(2026, 11, 28, 9, 0, tzinfo=LISBON)
    assert watch.look().empty


def test_an_event_the_user_already_told_of_is_not_asked_about(
    stream: MemoryStream, tmp_path: Path, clock: Clock
) -> None:
    stream.add("User: Malin's recital is on Saturday at 6 pm.", source="user")
    watch = watch_on(stream, tmp_path, clock)
    watch.look()
    clock.now = datetime(2026, 11, 28, 21, 0, tzinfo=LISBON)
    stream.add("User: Malin's recital went beautifully tonight.", source="user")
    clock.now = datetime(2026, 11, 29, 10, 0, tzinfo=LISBON)
    assert not [i for i in watch.look().items if i.kind == "passed"]


# Speaking first


def gate_at(
    tmp_path: Path,
    clock: Clock,
    present: bool = True,
    busy: bool = False,
    rules: GateRules | None = None,
) -> ProactiveGate:
    return ProactiveGate(
        rules or GateRules(quiet_hours=(time(22), time(8)), per_hour=2),
        lambda: present,
        lambda: busy,
        tmp_path / "proactive.json",
        clock,
    )


def test_the_gate_speaks_only_to_a_user_who_is_there_and_not_busy(
    tmp_path: Path, clock: Clock
) -> None:
    assert gate_at(tmp_path, clock).blocked() is None
    assert gate_at(tmp_path, clock, present=False).blocked() == "the user is not there"
    assert "speaking" in str(gate_at(tmp_path, clock, busy=True).blocked())


@pytest.mark.parametrize(("hour", "quiet"), [(21, False), (22, True), (2, True), (8, False)])
def test_quiet_hours_wrap_midnight(tmp_path: Path, clock: Clock, hour: int, quiet: bool) -> None:
    clock.now = FRIDAY.replace(hour=hour)
    assert (gate_at(tmp_path, clock).blocked() == "quiet hours") is quiet


def test_a_few_an_hour_said_once_and_not_now_holds_across_a_restart(
    tmp_path: Path, clock: Clock
) -> None:
    gate = gate_at(tmp_path, clock)
    gate.said(["upcoming:a"], "Malin's recital is at six today.")
    assert gate.said_before("upcoming:a") and not gate.said_before("upcoming:b")
    gate.said(["clash:a:b"], "The dentist and the recital are both on Tuesday at three.")
    assert "2 proactive messages" in str(gate.blocked())
    clock.advance(minutes=61)
    assert gate.blocked() is None
    until = gate.not_now()
    assert until == clock.now + timedelta(hours=2)
    reopened = gate_at(tmp_path, clock)
    assert "not now" in str(reopened.blocked()) and reopened.said_before("upcoming:a")
    clock.advance(hours=2, minutes=1)
    assert reopened.blocked() is None


@pytest.mark.parametrize(
    ("words", "quiet"),
    [
        ("Not now, please.", True),
        ("later", True),
        ("Stop interrupting me!", True),
        ("I'm busy.", True),
        ("Yes, it went well, thanks!", False),
        ("Can you tell me more about it later today?", True),
        ("What's on tomorrow?", False),
    ],
)
def test_what_asks_for_quiet(words: str, quiet: bool) -> None:
    assert asks_for_quiet(words) is quiet


# The agent at a heartbeat


def tick_agent(
    llm: ScriptedStream, stores: Stores, intentions: IntentionStore, clock: Clock
) -> Agent:
    tools = (*TOOLS, *heartbeat_tools(intentions, clock))
    turn_tools = [t for t in tools if not t.tick_only]
    context = ContextWindow(
        instructions(turn_tools), stores.core, ContextConfig(window_tokens=4096, reply_tokens=256)
    )
    return Agent(llm, stores, context, AgentConfig(), tools=tools, sleep=lambda s: None)


def test_a_heartbeat_offers_its_own_tools_and_a_message_only_when_it_may_speak(
    stores: Stores, tmp_path: Path, clock: Clock
) -> None:
    intentions = IntentionStore(tmp_path / "intentions.json")
    llm = ScriptedStream(
        say("Hello!"),
        action("stay_quiet", reason="nothing needs the user"),
        say("Malin's recital is at six today."),
    )
    agent = tick_agent(llm, stores, intentions, clock)
    agent.respond(UserText("Hi there."))
    assert "stay_quiet" not in tools_allowed(llm.schemas[0]), "a turn with the user"
    assert "stay_quiet" not in json.dumps(llm.calls[0][0]), "nor in the instructions"
    quiet = agent.respond(HeartbeatTick(("1. (new memory) User: I like tea.",), may_speak=False))
    assert quiet.reply == "" and [s.tool for s in quiet.steps] == ["stay_quiet"]
    assert set(tools_allowed(llm.schemas[1])) == {"set_intention", "revise_day_plan", "stay_quiet"}
    assert "delegate_task" not in tools_allowed(llm.schemas[1])
    assert "Nothing here needs the user" in llm.calls[1][-1]["content"]
    spoken = agent.respond(HeartbeatTick(("1. (coming up) Malin's recital (today 18:00)",)))
    assert tools_allowed(llm.schemas[2]) == ["send_message"], "something to tell: it is told"
    assert spoken.reply == "Malin's recital is at six today."


def test_an_intention_kept_at_a_heartbeat_is_stored_for_its_time(
    stores: Stores, tmp_path: Path, clock: Clock
) -> None:
    intentions = IntentionStore(tmp_path / "intentions.json")
    llm = ScriptedStream(
        action("set_intention", text="Ask how Malin's recital went", when="tomorrow at 10")
    )
    agent = tick_agent(llm, stores, intentions, clock)
    turn = agent.respond(
        HeartbeatTick(("1. (new memory) User: Malin's recital is tonight at 6 pm.",), False)
    )
    assert turn.reply == "" and not turn.steps[0].failed
    (kept,) = intentions.pending()
    assert kept.text == "Ask how Malin's recital went"
    assert kept.due_at == datetime(2026, 11, 28, 10, 0, tzinfo=LISBON)
    assert "kept for tomorrow at 10:00" in turn.steps[0].result


def test_a_heartbeat_may_have_the_day_plan_revised(
    stores: Stores, tmp_path: Path, clock: Clock
) -> None:
    reasons: list[str] = []
    tools = heartbeat_tools(IntentionStore(tmp_path / "i.json"), clock, reasons.append)
    llm = ScriptedStream(action("revise_day_plan", reason="the dentist moved to 4 pm"))
    context = ContextWindow(instructions(), stores.core, ContextConfig(window_tokens=4096))
    agent = Agent(llm, stores, context, AgentConfig(), tools=(*TOOLS, *tools))
    turn = agent.respond(HeartbeatTick(('1. (new memory) "The dentist moved to 4 pm."',), False))
    assert reasons == ["the dentist moved to 4 pm"] and turn.reply == ""


def test_an_intention_in_the_past_is_refused_to_the_model(
    stores: Stores, tmp_path: Path, clock: Clock
) -> None:
    intentions = IntentionStore(tmp_path / "intentions.json")
    llm = ScriptedStream(
        action("set_intention", text="Ask about lunch", when="2026-11-27T12:00:00+00:00"),
        action("stay_quiet", reason="done"),
    )
    turn = tick_agent(llm, stores, intentions, clock).respond(HeartbeatTick(("1. x",), False))
    assert turn.steps[0].failed and "not in the future" in turn.steps[0].result
    assert intentions.pending() == []


def test_digest_lines_put_what_may_need_the_user_first() -> None:
    digest = Digest(
        FRIDAY,
        (
            Item("memory:1", "memory", "User: I like tea."),
            Item("clash:1:2", "clash", "dentist and recital: both at Tue 15:00", True),
        ),
    )
    assert digest.tell() == (
        "two of their plans are at the same time: dentist and recital: both at Tue 15:00"
    )
    assert digest.lines() == [
        "1. (clash) dentist and recital: both at Tue 15:00",
        "2. (new memory) User: I like tea.",
    ]


@pytest.mark.parametrize(
    ("item", "opens"),
    [
        (Item("passed:1", "passed", '"Job interview at 2 pm" (today at 14:00)', True), "How did "),
        (Item("clash:1:2", "clash", '"dentist" and "play", both Thu', True), "Heads-up: "),
        (Item("upcoming:1", "upcoming", '"recital at 6 pm" (today)', True), "Just a reminder: "),
        (Item("task:1", "task", '"Find restaurants": Casa 12', True), "I've finished "),
        (Item("intention:1", "intention", "Ask how the move went", True), "How "),
    ],
)
def test_a_message_said_first_opens_with_what_kind_of_news_it_is(
    stores: Stores, tmp_path: Path, clock: Clock, item: Item, opens: str
) -> None:
    digest = Digest(FRIDAY, (item, Item("memory:1", "memory", '"I like tea."')))
    pattern = digest.opening()
    assert pattern is not None and re.fullmatch(pattern[1:-1], f"{opens}it went fine?")
    if item.kind in ("passed", "intention"):
        assert not re.fullmatch(pattern[1:-1], f"{opens}it went. Fine?"), "one question"
    reply = "How did the move go?" if item.kind == "intention" else f"{opens}the words."
    llm = ScriptedStream(say(reply))
    agent = tick_agent(llm, stores, IntentionStore(tmp_path / "intentions.json"), clock)
    event = HeartbeatTick(tuple(digest.lines()), True, FRIDAY, digest.tell(), pattern)
    assert agent.respond(event).reply == reply
    assert json.dumps(pattern) in json.dumps(llm.schemas[0])
    assert digest.tell() in llm.calls[0][-1]["content"]


def test_an_intention_that_asks_nothing_is_a_free_message() -> None:
    told = Digest(FRIDAY, (Item("intention:1", "intention", "Tell Aya the recital moved", True),))
    assert told.opening() is None and told.tell().startswith("do now what you meant to: ")
    asks = Digest(FRIDAY, (Item("intention:1", "intention", "Ask how the move went", True),))
    assert asks.tell() == "ask them how the move went"


def test_what_code_found_comes_before_the_agents_own_intentions() -> None:
    digest = Digest(
        FRIDAY,
        (
            Item("intention:1", "intention", "Check on the flight", True),
            Item("upcoming:1", "upcoming", '"My flight leaves at 7 pm"', True, "your flight"),
        ),
    )
    assert [i.kind for i in digest.actionable] == ["upcoming", "intention"]
    assert digest.tell() == "remind them it is coming up: your flight"


def test_what_needs_the_user_waits_while_they_may_not_be_spoken_to_and_comes_one_at_a_time(
    stream: MemoryStream, tmp_path: Path, clock: Clock
) -> None:
    watch = watch_on(stream, tmp_path, clock)
    watch.look()
    present = [False]
    gate = ProactiveGate(GateRules(), lambda: present[0], lambda: False, tmp_path / "p.json", clock)
    look = Look(watch, gate)
    watch.intentions.add("Ask how the move went", FRIDAY)
    watch.intentions.add("Ask about the new job", FRIDAY)
    clock.advance(minutes=5)
    assert look.wake() is None, "away, and nothing else new: no LLM is asked"
    present[0] = True
    woken = look.wake()
    assert woken is not None and woken.event.may_speak
    assert woken.event.tell == "ask them how the move went"
    settled = look.settle(woken, Turn(reply="How did the move go?"))
    assert settled.said == "How did the move go?" and gate.said_before(
        woken.digest.actionable[0].key
    )
    again = look.wake()
    assert again is not None and again.event.tell == "ask them about the new job"


@pytest.mark.parametrize(
    ("goal", "started"),
    [
        ("ask how the interview went", False),
        ("Tell the user the recital moved", False),
        ("Check with them whether the form was sent", False),
        ("Gather what the user said about the garden project into a note", True),
        ("Look through my memories for Aya's address", True),
    ],
)
def test_a_heartbeat_may_start_work_but_not_a_word_with_the_user(
    stores: Stores, tmp_path: Path, clock: Clock, goal: str, started: bool
) -> None:
    goals: list[str] = []
    tools = heartbeat_tools(
        IntentionStore(tmp_path / "i.json"), clock, delegate=lambda g: goals.append(g)
    )
    llm = ScriptedStream(
        action("start_background_task", goal=goal), action("stay_quiet", reason="nothing")
    )
    context = ContextWindow(instructions(), stores.core, ContextConfig(window_tokens=4096))
    agent = Agent(llm, stores, context, AgentConfig(), tools=(*TOOLS, *tools))
    turn = agent.respond(HeartbeatTick(('1. (new memory) "The garden meeting is Friday."',), False))
    assert "start_background_task" in tools_allowed(llm.schemas[0])
    assert goals == ([goal] if started else [])
    if not started:
        assert "cannot talk to the user" in turn.steps[0].result
        assert [s.tool for s in turn.steps] == ["start_background_task", "stay_quiet"]
