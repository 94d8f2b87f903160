"""The agent's intentions and the plans made before the planner was held to the user's time,
through a service over its real socket (real memory store and embedder; the LLM a scripted
endpoint), and on the plans pane (F3); a message the assistant says first, marked in the
conversation."""

from __future__ import annotations

import time as time_module
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, time, timedelta

import pytest
from textual.widgets import Input, Label

from assistant.clients.connection import ServiceClient
from assistant.config import LoadedConfig
from assistant.proactive.intentions import IntentionStore
from assistant.protocol import Update
from assistant.protocol.common import Failed
from assistant.protocol.conversation import (
    History,
    HistoryItem,
    ReplyChunk,
    ReplyEnd,
    ReplyStart,
)
from assistant.protocol.memory import MemoryStats
from assistant.protocol.tasks import (
    ClearOldPlans,
    EditIntention,
    GetIntentions,
    GetOldPlans,
    Intentions,
    OldPlans,
    PlanDone,
    SettleIntention,
)
from assistant.service.session import Session
from assistant.tasks.old_plans import GROUNDED_SINCE
from assistant.tasks.reminders import local_now
from tests.helpers.fake_openai import scripted_endpoint
from tests.helpers.service import InProcess, action, until
from tests.helpers.ui import wait_for
from ui.app import BrainApp
from ui.screens.confirm import ConfirmScreen
from ui.screens.intention_edit import IntentionEditScreen
from ui.screens.plans import PlansScreen
from ui.widgets.chat import ChatLog, MessageView
from ui.widgets.intention_table import IntentionTable
from ui.widgets.memory_table import FLAG, MemoryTable

RECITAL = "Ask Malin how the recital went"
BEFORE = GROUNDED_SINCE - timedelta(days=1)


@dataclass
class Running:
    loaded: LoadedConfig
    service: InProcess

    def session(self) -> Session:
        session = self.service.service.opening.session
        assert session is not None
        return session


@pytest.fixture
def running(
    loaded_for: Callable[..., LoadedConfig], start_service: Callable[..., InProcess]
) -> Iterator[Running]:
    """A service with one intention kept for tomorrow at 18:00, once its memory is open."""
    with scripted_endpoint("route", router=lambda body: action("Noted.")) as (url, _):
        loaded = loaded_for(**{"llm.base_url": url})
        tomorrow = local_now().date() + timedelta(days=1)
        due = datetime.combine(tomorrow, time(18), local_now().tzinfo)
        IntentionStore(loaded.settings.data_dir / "intentions.json").add(RECITAL, due)
        service = start_service(loaded)
        opened = service.service.opening
        deadline = time_module.monotonic() + 60
        while opened.session is None:
            assert not opened.failed(), "the memory could not be opened"
            assert time_module.monotonic() < deadline, "the memory did not open"
            time_module.sleep(0.1)
        yield Running(loaded, service)


async def ask(
    client: ServiceClient,
    request: GetIntentions | EditIntention | SettleIntention | GetOldPlans | ClearOldPlans,
) -> Update:
    await client.send(request)
    return (await until(client, lambda u: getattr(u, "ref", None) == request.ref))[-1]


async def test_intentions_are_listed_edited_and_settled_and_every_window_hears(
    running: Running,
) -> None:
    client = await ServiceClient.connect(running.loaded, "tui", start=False)
    other = await ServiceClient.connect(running.loaded, "other", start=False)
    listed = await ask(client, GetIntentions(ref="l"))
    assert isinstance(listed, Intentions) and listed.text == ""
    [row] = listed.rows
    assert (row.text, row.status, row.source) == (RECITAL, "pending", "agent")

    # The time as the user types it.
    moved = await ask(client, EditIntention(ref="e", id=row.id, due="tomorrow at 9"))
    assert isinstance(moved, Intentions), moved
    due = moved.rows[0].due_at.astimezone()
    assert (due.date(), due.time()) == (local_now().date() + timedelta(days=1), time(9))
    assert moved.text == f'changed "{RECITAL}", due tomorrow at 09:00'
    # Another window is told something changed (its plans pane reads the intentions again).
    await until(other, lambda u: isinstance(u, MemoryStats))

    renamed = await ask(client, EditIntention(ref="t", id=row.id, text="Ask Malin about it"))
    assert isinstance(renamed, Intentions) and renamed.rows[0].text == "Ask Malin about it"
    assert renamed.rows[0].due_at == moved.rows[0].due_at

    done = await ask(client, SettleIntention(ref="d", id=row.id, status="done"))
    assert isinstance(done, Intentions) and done.rows[0].status == "done"
    assert done.text == 'marked done "Ask Malin about it"'
    again = await ask(client, SettleIntention(ref="p", id=row.id, status="pending"))
    assert isinstance(again, Intentions) and again.rows[0].status == "pending"
    assert running.session().intentions.get(row.id).status == "pending"

    # What cannot be done comes back in one line, and changes nothing.
    for request, said in (
        (EditIntention(ref="f1", id=row.id, due="someday"), "could not tell when 'someday' is"),
        (EditIntention(ref="f2", id=row.id, due="2020-01-01T09:00"), "is not in the future"),
        (EditIntention(ref="f3", id=row.id), "say what to change"),
        (EditIntention(ref="f4", id=row.id, text="   "), "needs some text"),
        (SettleIntention(ref="f5", id="i-nope", status="done"), "no intention i-nope"),
    ):
        failed = await ask(client, request)
        assert isinstance(failed, Failed) and said in failed.text, failed
        assert "\n" not in failed.text
    assert running.session().intentions.get(row.id).text == "Ask Malin about it"
    await client.close()
    await other.close()


async def test_the_day_plan_is_made_around_the_intentions_due_today(running: Running) -> None:
    session = running.session()
    now = session.clock()
    tonight = datetime.combine(now.date(), time(23, 59), now.tzinfo)
    session.intentions.add("Ask Rik whether the report went out", tonight)
    settled = session.intentions.add("Ask about the plumber", tonight)
    session.intentions.settle(settled.id, "done")
    lines = list(session.planner.context(now))
    assert "Intention at 23:59: Ask Rik whether the report went out" in lines
    # Not tomorrow's, nor one already done.
    assert not any(RECITAL in line or "plumber" in line for line in lines)


def add_plans(session: Session) -> tuple[list[str], list[str]]:
    """Two plans the planner made before the fix (flagged), and a plan of the user's from
    then and one the planner made since (not flagged)."""
    stream = session.stores.stream
    old = [
        stream.add(text, "plan", "assistant", created_at=BEFORE).id
        for text in (
            "Plan for Thu 26 Nov, 09:00-12:00: Go to the library to study maths",
            "Plan for Thu 26 Nov, 14:00-15:00: Walk around Fir Street",
        )
    ]
    kept = [
        stream.add(
            "Plan for Thu 26 Nov, 18:00-19:00: Choir practice", "plan", "user", created_at=BEFORE
        ).id,
        stream.add("Plan for today, 10:00-11:00: Write the report", "plan", "assistant").id,
    ]
    return old, kept


async def test_old_plans_are_listed_and_cleared_softly_when_asked(running: Running) -> None:
    session = running.session()
    old, kept = add_plans(session)
    client = await ServiceClient.connect(running.loaded, "tui", start=False)
    listed = await ask(client, GetOldPlans(ref="o"))
    assert isinstance(listed, OldPlans)
    assert listed.ids == old and listed.before == GROUNDED_SINCE

    cleared = await ask(client, ClearOldPlans(ref="c"))
    assert isinstance(cleared, PlanDone) and cleared.text.startswith("cleared 2 plans made")
    stream = session.stores.stream
    for record_id in old:
        record = stream.get(record_id)
        # Deleted softly, through the memory stream: restorable, and in the history.
        assert record is not None and record.deleted
        assert stream.changes(record_id)[0].action == "delete"
    assert all(not stream.get(i).deleted for i in kept)  # type: ignore[union-attr]
    listed = await ask(client, GetOldPlans(ref="o2"))
    assert isinstance(listed, OldPlans) and listed.ids == []
    await client.close()


async def test_the_plans_pane_edits_settles_intentions_and_clears_old_plans(
    running: Running,
) -> None:
    old, _ = add_plans(running.session())
    app = BrainApp(running.loaded)
    async with app.run_test(size=(120, 44)) as pilot:
        await wait_for(lambda: app.conversation.link.client is not None, 30)
        await pilot.press("f3")
        pane = app.screen
        assert isinstance(pane, PlansScreen)
        table = pane.query_one(IntentionTable)
        await wait_for(lambda: table.row_count == 1, 10)
        assert table.get_row_at(0)[1:3] == ["pending", "agent"]

        await pilot.press("i")
        assert table.has_focus
        await pilot.press("x")
        await wait_for(lambda: table.current and table.current.status == "done", 10)
        await pilot.press("x")  # again: pending
        await wait_for(lambda: table.current and table.current.status == "pending", 10)
        await pilot.press("n")
        await wait_for(lambda: table.current and table.current.status == "cancelled", 10)

        await pilot.press("e")
        editor = app.screen
        assert isinstance(editor, IntentionEditScreen)
        due = editor.query_one("#intention-due", Input)
        due.value = "someday"
        await pilot.press("ctrl+s")
        error = editor.query_one("#intention-edit-error", Label)
        await wait_for(lambda: "could not tell when" in str(error.render()), 10)
        assert app.screen is editor  # still open, with what was typed
        due.value = "in 2 hours"
        await pilot.press("ctrl+s")
        await wait_for(lambda: app.screen is pane, 10)
        moved = table.current
        assert moved is not None
        assert abs((moved.due_at - local_now()) - timedelta(hours=2)) < timedelta(minutes=2)

        # Plans made before the fix are flagged, and cleared only once the user says yes.
        plans = pane.query_one(MemoryTable)
        await wait_for(lambda: plans.flagged == frozenset(old), 10)
        pane.load()
        await wait_for(lambda: set(plans.memories) >= set(old), 10)
        flagged = [str(plans.get_row(i)[-1]) for i in old]
        assert all(text.startswith(FLAG) for text in flagged)
        line = pane.query_one("#old-plans", Label)
        assert line.display and "2 plans made before" in str(line.render())
        await pilot.press("o")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        assert pane.is_current
        stream = running.session().stores.stream
        assert not any(stream.get(i).deleted for i in old)  # type: ignore[union-attr]
        await pilot.press("o", "y")
        await wait_for(lambda: not plans.flagged and not line.display, 30)
        assert all(stream.get(i).deleted for i in old)  # type: ignore[union-attr]
        # Nothing left to clear: the key is not offered.
        assert pane.check_action("clear_old", ()) is False
        await pilot.press("ctrl+q")


async def test_a_message_said_first_is_marked_in_the_conversation(running: Running) -> None:
    app = BrainApp(running.loaded)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(lambda: app.conversation.link.client is not None, 30)
        screen = app.conversation
        said = "Malin's recital was yesterday: how did it go?"
        for update in (
            ReplyStart(turn=900, proactive=True),
            ReplyChunk(turn=900, text=said),
            ReplyEnd(turn=900, text=said),
            ReplyStart(turn=901),
            ReplyChunk(turn=901, text="A reply."),
            ReplyEnd(turn=901, text="A reply."),
            History(items=[HistoryItem(role="assistant", text="Earlier.", proactive=True)]),
        ):
            screen.show(update)
        await pilot.pause()
        views = {v.text: v for v in screen.query_one(ChatLog).query(MessageView)}
        first, reply, earlier = views[said], views["A reply."], views["Earlier."]
        assert first.has_class("proactive") and first.border_title == "Brain · said first"
        assert not reply.has_class("proactive") and reply.border_title == "Brain"
        assert earlier.has_class("proactive")
        assert earlier.border_title == "Brain · said first · earlier"
        await pilot.press("ctrl+q")
