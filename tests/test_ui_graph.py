"""The knowledge graph on the memory screen, driven by Textual's Pilot against a real service
(in-process, real memory store, graph tables and embedder) whose LLM is a scripted endpoint:
an entity's facts, their history and the memories behind them; correcting, retiring and
undoing a fact, and the agent's next turn being told."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from assistant.config import LoadedConfig
from memory.archival import ArchivalStore
from memory.database import open_database
from memory.embedder import OnnxSentenceEmbedder
from memory.graph.store import GraphStore
from memory.locking import WriteLock
from tests.helpers.fake_openai import scripted_endpoint
from tests.helpers.memories import FACTS, prompt_of, seed
from tests.helpers.service import InProcess, action
from tests.helpers.ui import wait_for
from tests.memory_helpers import START, store_fact
from ui.app import BrainApp
from ui.screens.entities import EntitiesScreen
from ui.screens.entity import EntityScreen
from ui.screens.memory import MemoryScreen
from ui.screens.memory_detail import MemoryDetailScreen

SIZE = (130, 44)


def seed_graph(loaded: LoadedConfig, embedder: OnnxSentenceEmbedder, ids: dict[str, str]) -> None:
    """Ana lived in Breda (a document says), then Porto (the fact from the seeded memory),
    and a wrong fact."""
    data = loaded.settings.data_dir
    store = GraphStore(open_database(data), WriteLock(data / "memory.lock"), embedder)
    archival = ArchivalStore(open_database(data), WriteLock(data / "memory.lock"), embedder)
    [piece] = archival.insert("Ana grew up in Breda.", "import", "family.md")
    breda = store_fact(
        store, "Ana", "lives in", "Breda", ("gone", piece), START - timedelta(days=400)
    )
    porto = store_fact(store, "Ana", "lives in", "Porto", (ids[FACTS[0]],))
    store.retire(breda.id, porto.valid_from, porto.id)
    store_fact(store, "Ana", "works as", "pasta", (ids[FACTS[0]],))
    store_fact(store, "Pedro", "plays", "cello", (ids[FACTS[1]],))


def cells(table: DataTable[Any], column: int) -> list[str]:
    return [str(table.get_row_at(i)[column]) for i in range(table.row_count)]


async def choose(pilot: Pilot[Any], screen: EntityScreen, fact: str) -> None:
    table = screen.query_one("#entity-facts", DataTable)
    table.focus()
    table.move_cursor(row=cells(table, 0).index(fact))
    await pilot.pause()


async def test_an_entity_shows_its_facts_and_the_user_corrects_retires_and_undoes(
    loaded_for: Callable[..., LoadedConfig],
    start_service: Callable[..., InProcess],
    embedder: OnnxSentenceEmbedder,
) -> None:
    with scripted_endpoint("stream", action("Noted.")) as (url, endpoint):
        loaded = loaded_for(**{"llm.base_url": url})
        seed_graph(loaded, embedder, seed(loaded, embedder))
        start_service(loaded)
        app = BrainApp(loaded)
        async with app.run_test(size=SIZE) as pilot:
            await wait_for(lambda: app.link.client is not None, 30)
            await pilot.press("f2")
            assert isinstance(app.screen, MemoryScreen)
            await pilot.press("g")
            entities = app.screen
            assert isinstance(entities, EntitiesScreen)
            await wait_for(lambda: bool(entities.rows), 30)
            # Most facts first; the search narrows by name.
            assert [r.name for r in entities.rows][:1] == ["Ana"]
            assert {r.name for r in entities.rows} >= {"Ana", "Porto", "Breda", "Pedro"}
            entities.query_one("#entity-search", Input).value = "ped"
            await wait_for(lambda: [r.name for r in entities.rows] == ["Pedro"], 10)
            entities.query_one("#entity-search", Input).value = ""
            await wait_for(lambda: len(entities.rows) > 1, 10)
            entities.query_one("#entity-table", DataTable).focus()
            await pilot.press("enter")

            screen = app.screen
            assert isinstance(screen, EntityScreen)
            await wait_for(lambda: bool(screen.facts), 10)
            facts = screen.query_one("#entity-facts", DataTable)
            # Current facts first; the past one says when it stopped and what replaced it.
            assert cells(facts, 0)[-1] == "Ana lives in Breda"
            assert "replaced by “Ana lives in Porto”" in cells(facts, 1)[-1]
            assert "2 facts hold, 1 past" in str(screen.query_one("#entity-meta").render())

            # The memories behind a fact, and one opened.
            await choose(pilot, screen, "Ana lives in Porto")
            memories = screen.query_one("#fact-memories", DataTable)
            assert cells(memories, 1) == [FACTS[0]]
            memories.focus()
            await pilot.press("enter")
            assert isinstance(app.screen, MemoryDetailScreen)
            await pilot.press("escape")
            assert app.screen is screen

            # A fact learnt from a document shows the piece it came from, which opens nothing.
            await choose(pilot, screen, "Ana lives in Breda")
            assert cells(memories, 1) == ["family.md: Ana grew up in Breda."]
            memories.focus()
            await pilot.press("enter")
            assert app.screen is screen

            # Correct the wrong fact.
            await choose(pilot, screen, "Ana works as pasta")
            await pilot.press("e")
            box = screen.query_one("#fact-object", Input)
            assert box.has_focus and box.value == "pasta"
            box.value = "nurse"
            await pilot.press("ctrl+s")
            await wait_for(lambda: "Ana works as nurse" in cells(facts, 0), 10)
            assert not screen.query_one("#fact-edit").display

            # Retire the move to Porto: past, and undo brings it back.
            await choose(pilot, screen, "Ana lives in Porto")
            await pilot.press("r")
            await wait_for(
                lambda: "1 facts hold, 2 past" in str(screen.query_one("#entity-meta").render()), 10
            )
            assert "retired" in cells(facts, 1)[cells(facts, 0).index("Ana lives in Porto")]
            assert [c.action for c in screen.changes] == ["retire", "edit"]
            screen.query_one("#entity-history", DataTable).focus()
            await pilot.press("ctrl+z")
            await wait_for(
                lambda: "2 facts hold, 1 past" in str(screen.query_one("#entity-meta").render()), 10
            )
            assert [c.action for c in screen.changes] == ["undo", "retire", "edit"]

            # The agent is told of the correction before its next turn.
            await pilot.press("escape", "escape", "escape")
            assert app.screen is app.conversation
            await pilot.click("#prompt")
            await pilot.press(*"What does Ana do?", "enter")
            await wait_for(lambda: not app.conversation.replying and len(endpoint.requests) > 0, 30)
            prompt = prompt_of(endpoint)
            assert 'corrected the fact "Ana works as pasta" to "Ana works as nurse"' in prompt
            await pilot.press("ctrl+q")
