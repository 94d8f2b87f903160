"""The memory screens of the terminal app, driven by Textual's Pilot against a real service
(in-process, real memory store and embedder) whose LLM is a scripted endpoint: what the
endpoint is sent shows what the agent's next turn retrieved after an edit on screen."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import pytest
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import Input, TextArea, Tree
from textual.widgets.data_table import ColumnKey

import ui.app
from assistant.config import LoadedConfig
from assistant.garbage import settle_garbage
from assistant.protocol.conversation import Progress, Status
from assistant.protocol.memory import MemoryRow
from memory.embedder import OnnxSentenceEmbedder
from tests.helpers.fake_openai import ScriptedEndpoint, scripted_endpoint
from tests.helpers.memories import FACTS, INSIGHT, agent_requests, prompt_of, retrieved, seed
from tests.helpers.service import InProcess, action
from tests.helpers.ui import wait_for
from ui.app import KEPT_PANES, BrainApp
from ui.screens.core_memory import CoreMemoryScreen
from ui.screens.first_run import FirstRunScreen
from ui.screens.memory import MemoryScreen
from ui.screens.memory_detail import MemoryDetailScreen
from ui.screens.tasks import TasksScreen
from ui.widgets.memory_table import TEXT_COLUMN, MemoryTable

SIZE = (130, 40)


async def set_value(box: Input, text: str) -> None:
    box.value = text


def table_texts(screen: MemoryScreen) -> list[str]:
    return [row.text for row in screen.query_one(MemoryTable).memories.values()]


async def open_memory(app: BrainApp, pilot: Pilot[Any]) -> MemoryScreen:
    await wait_for(lambda: app.link.client is not None, 30)
    await pilot.press("f2")
    screen = app.screen
    assert isinstance(screen, MemoryScreen)
    await wait_for(lambda: screen.loads > 0, 30)
    return screen


@contextmanager
def seeded_app(
    loaded_for: Callable[..., LoadedConfig],
    start_service: Callable[..., InProcess],
    embedder: OnnxSentenceEmbedder,
) -> Iterator[tuple[BrainApp, ScriptedEndpoint]]:
    """The app on a service of the seeded memories, whose LLM notes whatever it is told."""
    with scripted_endpoint("stream", action("Noted.")) as (url, endpoint):
        loaded = loaded_for(**{"llm.base_url": url})
        seed(loaded, embedder)
        start_service(loaded)
        yield BrainApp(loaded), endpoint


async def reload(screen: MemoryScreen, action: Callable[[], object]) -> None:
    """Do ``action`` and wait until the table shows a page loaded after it."""
    before = screen.loads
    await action()  # type: ignore[misc]
    await wait_for(lambda: screen.loads > before, 30)


async def point_at(pilot: Pilot[Any], screen: MemoryScreen, text: str) -> None:
    """Put the cursor on the row of the memory with ``text``: found by its key, as a page
    loaded meanwhile (the ratings' or a search's) may have put the rows in another order."""
    table = screen.query_one(MemoryTable)
    table.focus()

    def on_it() -> bool:
        current = table.current
        if current is not None and current.text == text:
            return True
        key = next((key for key, m in table.memories.items() if m.text == text), None)
        if key is not None:
            table.move_cursor(row=table.get_row_index(key))
        return False

    await wait_for(on_it, 10)
    await pilot.pause()


async def ask_agent(app: BrainApp, pilot: Pilot[Any], endpoint: ScriptedEndpoint) -> None:
    """Back to the conversation, ask where Ana lives, and wait for the reply."""
    await pilot.press("escape")
    assert app.screen is app.conversation
    asked = len(agent_requests(endpoint))
    await pilot.click("#prompt")
    await pilot.press(*"Where does Ana live?", "enter")
    await wait_for(lambda: len(agent_requests(endpoint)) > asked, 30)
    await wait_for(lambda: not app.conversation.replying, 30)


async def test_edit_delete_and_undo_on_screen_reach_the_agents_next_turn(
    loaded_for: Callable[..., LoadedConfig],
    start_service: Callable[..., InProcess],
    embedder: OnnxSentenceEmbedder,
) -> None:
    with seeded_app(loaded_for, start_service, embedder) as (app, endpoint):
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_memory(app, pilot)
            assert len(table_texts(screen)) == 5
            assert "1-5 of 5" in str(screen.query_one("#memory-status").render())

            # Search finds by words, and by meaning.
            search = screen.query_one("#memory-search", Input)
            await reload(screen, lambda: pilot.press("slash", *"dentist"))
            await wait_for(lambda: table_texts(screen)[:1] == [FACTS[2]], 10)
            search.value = ""
            await reload(screen, lambda: pilot.press(*"which drink does Joana like"))
            await wait_for(lambda: table_texts(screen)[:1] == [FACTS[3]], 10)
            search.value = ""
            await wait_for(lambda: len(table_texts(screen)) == 5, 10)
            await pilot.press("enter")

            # Edit the text in the detail screen.
            await point_at(pilot, screen, FACTS[0])
            await pilot.press("e")
            detail = app.screen
            assert isinstance(detail, MemoryDetailScreen)
            await wait_for(lambda: detail.row is not None, 10)
            text = detail.query_one("#detail-text", TextArea)
            assert text.has_focus and text.text == FACTS[0]
            text.text = "Ana lives in Lugano now."
            await pilot.press("ctrl+s")
            await wait_for(lambda: detail.row and detail.row.text.endswith("Lugano now."), 10)
            assert [c.action for c in detail.changes] == ["edit", "add"]
            await reload(screen, lambda: pilot.press("escape"))
            assert "Ana lives in Lugano now." in table_texts(screen)

            await ask_agent(app, pilot, endpoint)
            assert "Ana lives in Lugano now." in retrieved(endpoint)
            assert "Porto" not in retrieved(endpoint)
            assert "[the user changed a memory]" in prompt_of(endpoint)

            # Delete from the table: not retrieved; undo: back. The agent is told of each (the
            # memory stays in its history, in the block it was first retrieved in).
            screen = await open_memory(app, pilot)
            await point_at(pilot, screen, "Ana lives in Lugano now.")
            await reload(screen, lambda: pilot.press("d"))
            assert "Ana lives in Lugano now." not in table_texts(screen)
            await ask_agent(app, pilot, endpoint)
            assert "Ana lives" not in retrieved(endpoint)
            assert "[the user changed a memory] deleted the memory" in prompt_of(endpoint)

            screen = await open_memory(app, pilot)
            await reload(screen, lambda: pilot.press("ctrl+z"))
            assert "Ana lives in Lugano now." in table_texts(screen)
            await ask_agent(app, pilot, endpoint)
            assert "[the user changed a memory] undid a change" in prompt_of(endpoint)
            await pilot.press("ctrl+q")


async def test_a_page_asked_for_before_the_cursor_moved_leaves_it_where_the_user_put_it(
    loaded_for: Callable[..., LoadedConfig],
    start_service: Callable[..., InProcess],
    embedder: OnnxSentenceEmbedder,
) -> None:
    """A page is asked for again whenever the screen is shown or the memories change; the
    user's cursor moves while it is on its way. The page that arrives keeps the cursor on the
    row it is on then, not on the row it was on when the page was asked for."""
    with seeded_app(loaded_for, start_service, embedder) as (app, _):
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_memory(app, pilot)
            table = screen.query_one(MemoryTable)
            await wait_for(lambda: not screen.is_loading, 10)
            assert table.current is not None
            before = screen.loads
            screen.load(stay=True)
            chosen = next(m for m in table.memories.values() if m.id != table.current.id)
            table.move_cursor(row=table.get_row_index(chosen.id))
            await wait_for(lambda: screen.loads > before, 10)
            await pilot.pause()
            assert table.current is not None and table.current.id == chosen.id
            await pilot.press("ctrl+q")


async def test_the_memory_pane_is_built_ahead_and_restyled_only_when_its_look_changed(
    loaded_for: Callable[..., LoadedConfig],
    start_service: Callable[..., InProcess],
    embedder: OnnxSentenceEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Building the memory screen is the slow part of opening it: the app builds it (and the
    plans pane) once the memory is open, with its first page, and lays it out, while the
    conversation keeps the keyboard. Shown again, it is restyled only if the theme changed
    meanwhile. What the window holds by then is frozen out of the garbage collector's full
    passes."""
    with scripted_endpoint("stream", action("Noted.")) as (url, _):
        loaded = loaded_for(**{"llm.base_url": url})
        seed(loaded, embedder)
        start_service(loaded)
        app = BrainApp(loaded)
        settled: list[bool] = []

        def settle() -> None:
            settled.append(all(app.get_screen(name).parent for name in KEPT_PANES))
            settle_garbage()

        monkeypatch.setattr(ui.app, "settle_garbage", settle)
        async with app.run_test(size=SIZE) as pilot:
            pane = app.get_screen("memory", MemoryScreen)
            await wait_for(lambda: pane.loads > 0, 30)
            await wait_for(lambda: app.get_screen("plans", MemoryScreen).loads > 0, 30)
            await wait_for(lambda: app.conversation.state == "ready", 30)
            assert app.screen is app.conversation
            assert app.conversation.query_one("#prompt").has_focus
            table = pane.query_one(MemoryTable)
            assert table.row_count == 5
            await wait_for(lambda: pane.size == app.size, 10)  # laid out (and drawn) hidden

            await pilot.press("f2")
            assert app.screen is pane and table.row_count == 5 and table.has_focus
            dark = table.styles.background
            await pilot.press("escape")
            app.theme = "textual-light"
            await pilot.pause()
            await pilot.press("f2")
            await pilot.pause()
            assert table.styles.background != dark
            # What the window built by then is left out of later garbage collections...
            assert settled == [True]
            await pilot.press("ctrl+q")
        # ...until it closes.
        assert gc.get_freeze_count() == 0


async def test_evidence_tree_pin_filters_core_memory_and_panes(
    loaded_for: Callable[..., LoadedConfig],
    start_service: Callable[..., InProcess],
    embedder: OnnxSentenceEmbedder,
) -> None:
    with scripted_endpoint("stream", action("Noted.")) as (url, endpoint):
        loaded = loaded_for(**{"llm.base_url": url})
        ids = seed(loaded, embedder)
        start_service(loaded)
        app = BrainApp(loaded)
        async with app.run_test(size=SIZE) as pilot:
            count = app.conversation.query_one("#memory-count")
            await wait_for(lambda: str(count.render()) == "5 memories", 30)
            await wait_for(lambda: app.conversation.state == "ready", 30)

            # A first run's weight assembly is explained on its own screen, gone once ready.
            label = "assembling qwen (model.gguf)"
            app.conversation.show(Progress(label=label, done=1, total=4, action="assembling"))
            await pilot.pause()
            first_run = app.screen
            assert isinstance(first_run, FirstRunScreen)
            app.conversation.show(Progress(label=label, done=4, total=4, action="assembling"))
            await pilot.pause()
            assert first_run.finished == [label]
            app.conversation.show(Status(state="ready", text="ready: scripted", endpoint=url))
            await pilot.pause()
            assert app.screen is app.conversation

            screen = await open_memory(app, pilot)

            # A reflection's evidence tree; Enter on a cited memory opens it.
            await point_at(pilot, screen, INSIGHT)
            await pilot.press("enter")
            detail = app.screen
            assert isinstance(detail, MemoryDetailScreen)
            await wait_for(lambda: detail.row is not None, 10)
            tree = detail.query_one("#detail-evidence", Tree)
            assert [n.data for n in tree.root.children] == [ids[FACTS[0]], ids[FACTS[1]]]
            tree.focus()
            tree.move_cursor(tree.root.children[1])
            await pilot.press("enter")
            cited = app.screen
            assert isinstance(cited, MemoryDetailScreen) and cited.record_id == ids[FACTS[1]]
            await pilot.press("escape", "escape")
            assert app.screen is screen

            # Pin from the table, then filter by pinned.
            await point_at(pilot, screen, FACTS[3])
            await reload(screen, lambda: pilot.press("p"))
            await reload(screen, lambda: pilot.click("#filter-pinned"))
            assert table_texts(screen) == [FACTS[3]]
            await reload(screen, lambda: pilot.click("#filter-pinned"))

            # A time range: every memory was written today.
            today = datetime.now().date()
            box = screen.query_one("#memory-search", Input)
            tomorrow = today + timedelta(days=1)
            await reload(screen, lambda: set_value(box, f"from:{tomorrow}"))
            assert table_texts(screen) == []
            assert "no memories match" in str(screen.query_one("#memory-status").render())
            await reload(screen, lambda: set_value(box, f"from:{today} to:{today}"))
            assert len(table_texts(screen)) == 5
            await reload(screen, lambda: set_value(box, f"from:{today} cello"))
            assert table_texts(screen)[0] == FACTS[1]
            await reload(screen, lambda: set_value(box, "from:2026-13-01"))
            assert box.has_class("-invalid") and len(table_texts(screen)) == 5
            await reload(screen, lambda: set_value(box, ""))

            # Sort by importance: the reflection (6) comes first.
            await reload(screen, lambda: pilot.press("s", "s"))
            assert table_texts(screen)[0] == INSIGHT

            # Core memory: edit the human block; the next turn's prompt holds it.
            await pilot.press("c")
            core = app.screen
            assert isinstance(core, CoreMemoryScreen)
            await wait_for(lambda: bool(core.blocks), 10)
            human = core.query_one("#core-human", TextArea)
            human.text = "Name: Rita. Lives in Breda."
            await pilot.press("ctrl+s")
            await wait_for(lambda: core.blocks["human"].value == "Name: Rita. Lives in Breda.", 10)
            await pilot.press("escape", "escape")
            assert app.screen is app.conversation
            await pilot.click("#prompt")
            await pilot.press(*"What is my name?", "enter")
            await wait_for(lambda: bool(agent_requests(endpoint)), 30)
            await wait_for(lambda: not app.conversation.replying, 30)
            assert "Name: Rita. Lives in Breda." in prompt_of(endpoint)

            # The plans pane is the memory screen on plan memories; the tasks pane shows the
            # service's work.
            await pilot.press("f3")
            plans = app.screen
            assert isinstance(plans, MemoryScreen) and plans.kinds == ("plan",)
            await wait_for(lambda: plans.loads > 0, 10)
            assert "no memories" in str(plans.query_one("#memory-status").render())
            await pilot.press("f4")
            tasks = app.screen
            assert isinstance(tasks, TasksScreen)
            await wait_for(lambda: tasks.latest is not None, 10)
            assert len(app.screen_stack) == 3  # panes replace each other over the conversation
            await pilot.press("ctrl+q")


class TableApp(App[None]):
    def compose(self) -> ComposeResult:
        yield MemoryTable()


def memory_row(text: str) -> MemoryRow:
    now = datetime.now().astimezone()
    return MemoryRow(
        id="m1",
        kind="observation",
        text=text,
        created_at=now,
        last_accessed_at=now,
        importance=3,
        importance_state="rated",
        sources=["user"],
        pinned=False,
        deleted=False,
    )


async def test_a_page_of_memories_is_as_wide_as_its_text_before_the_table_measures_it() -> None:
    """On a loaded machine a frame could be drawn between the rows' arrival and the table's
    own measuring (when it is next idle); that frame's rows stayed cut at the "Memory" label's
    width. The text column is widened as the rows are added."""
    said = "User: My sister Aya lives in Lugano and teaches music at the conservatory."
    app = TableApp()
    async with app.run_test(size=(160, 20)):
        table = app.query_one(MemoryTable)
        table.show([memory_row(said)])
        assert table.columns[ColumnKey(TEXT_COLUMN)].content_width >= len(said)


async def test_the_same_page_again_leaves_the_table_as_drawn() -> None:
    """The page is asked for each time the screen is shown; when nothing on it changed the
    table keeps its rows (refilling would draw them all again). Any change it draws counts:
    words, a mark, an importance being rated."""
    rated = memory_row("User: Aya teaches music.")
    app = TableApp()
    async with app.run_test(size=(160, 20)):
        table = app.query_one(MemoryTable)
        table.show([rated])
        later = rated.last_accessed_at + timedelta(hours=1)
        assert table.shows([rated.model_copy(update={"last_accessed_at": later})])
        for changed in (
            {"text": "User: Aya teaches piano."},
            {"pinned": True},
            {"deleted": True},
            {"importance_state": "pending"},
            {"importance": 5},
            {"id": "m2"},
        ):
            assert not table.shows([rated.model_copy(update=changed)]), changed
        assert not table.shows([rated, rated.model_copy(update={"id": "m2"})])
        edited = rated.model_copy(update={"text": "User: Aya teaches piano."})
        table.show([edited])
        assert table.shows([edited]) and str(table.get_row("m1")[-1]) == edited.text
