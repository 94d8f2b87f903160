"""What the user sees, pinned as SVG snapshots (pytest-textual-snapshot) at a fixed terminal
size: the conversation with a Markdown reply, the memory table, a reflection's detail with its
evidence tree, and core memory. The memories are written with a fixed clock and shown in UTC,
so the screens are the same on every run; `pytest --snapshot-update` accepts a deliberate
change."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from textual.pilot import Pilot

from assistant.config import LoadedConfig
from memory.embedder import OnnxSentenceEmbedder
from tests.helpers.fake_openai import scripted_endpoint
from tests.helpers.memories import INSIGHT, seed
from tests.helpers.service import InProcess, action
from tests.helpers.ui import wait_for
from ui.app import BrainApp
from ui.screens.memory import MemoryScreen
from ui.screens.memory_detail import MemoryDetailScreen
from ui.widgets.memory_table import MemoryTable
from ui.widgets.status import StartupStatus

SIZE = (120, 32)
WRITTEN_AT = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)

Compare = Callable[..., bool]
REPLY = "Ana lives in **Lisbon**. You told me:\n\n- she moved in *May*\n- she works at a school"


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def app(
    utc: None,
    loaded_for: Callable[..., LoadedConfig],
    start_service: Callable[..., InProcess],
    embedder: OnnxSentenceEmbedder,
) -> Iterator[BrainApp]:
    with scripted_endpoint("stream", action(REPLY)) as (url, _):
        loaded = loaded_for(**{"llm.base_url": url})
        seed(loaded, embedder, clock=lambda: WRITTEN_AT)
        start_service(loaded)
        yield BrainApp(loaded)


async def steady(pilot: Pilot[Any]) -> None:
    """No blinking cursors: a snapshot must not depend on when in the blink it is taken."""
    for widget in pilot.app.screen.query("Input, TextArea"):
        widget.cursor_blink = False  # type: ignore[attr-defined]
    await pilot.pause()


async def memory_screen(pilot: Pilot[Any]) -> MemoryScreen:
    app = pilot.app
    assert isinstance(app, BrainApp)
    await wait_for(lambda: app.link.client is not None and app.link.stats is not None, 30)
    await pilot.press("f2")
    screen = app.screen
    assert isinstance(screen, MemoryScreen)
    await wait_for(lambda: screen.loads > 0, 30)
    return screen


def steadily(ready: Callable[[Pilot[Any]], Any]) -> Callable[[Pilot[Any]], Any]:
    async def run(pilot: Pilot[Any]) -> None:
        await ready(pilot)
        await steady(pilot)

    return run


def test_conversation(app: BrainApp, snap_compare: Compare) -> None:
    async def ready(pilot: Pilot[Any]) -> None:
        assert isinstance(pilot.app, BrainApp)
        screen = pilot.app.conversation
        await wait_for(lambda: screen.state == "ready" and pilot.app.link.stats is not None, 30)
        await pilot.click("#prompt")
        await pilot.press(*"Where does Ana live?", "enter")
        await wait_for(lambda: screen.query("MessageView.assistant") and not screen.replying, 30)
        # Exactly this once the new turn's two memories are counted and rated ("· rating 2"
        # while they wait).
        count = screen.query_one("#memory-count")
        await wait_for(lambda: str(count.render()) == "7 memories", 30)
        # The scripted endpoint's port changes from run to run.
        screen.sub_title = "(endpoint hidden)"
        screen.query_one(StartupStatus).show("ready: (endpoint hidden)", "ready")

    assert snap_compare(app, terminal_size=SIZE, run_before=steadily(ready))


def test_memory_table(app: BrainApp, snap_compare: Compare) -> None:
    async def ready(pilot: Pilot[Any]) -> None:
        screen = await memory_screen(pilot)
        # Everything was written at one moment: sort by importance for a stable order.
        before = screen.loads
        await pilot.press("s", "s")
        await wait_for(lambda: screen.loads > before + 1, 30)
        screen.query_one("#memory-status").update("(timing hidden)")  # type: ignore[attr-defined]

    assert snap_compare(app, terminal_size=SIZE, run_before=steadily(ready))


def test_reflection_with_its_evidence_tree(app: BrainApp, snap_compare: Compare) -> None:
    async def ready(pilot: Pilot[Any]) -> None:
        screen = await memory_screen(pilot)
        table = screen.query_one(MemoryTable)
        row = next(i for i, m in enumerate(table.memories.values()) if m.text == INSIGHT)
        table.move_cursor(row=row)
        await pilot.press("enter")
        detail = pilot.app.screen
        assert isinstance(detail, MemoryDetailScreen)
        await wait_for(lambda: detail.row is not None, 30)
        assert detail.row is not None and detail.row.text == INSIGHT

    assert snap_compare(app, terminal_size=SIZE, run_before=steadily(ready))


def test_core_memory(app: BrainApp, snap_compare: Compare) -> None:
    async def ready(pilot: Pilot[Any]) -> None:
        await memory_screen(pilot)
        await pilot.press("c")
        await wait_for(lambda: bool(getattr(pilot.app.screen, "blocks", None)), 30)

    assert snap_compare(app, terminal_size=SIZE, run_before=steadily(ready))
