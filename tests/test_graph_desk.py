"""The service's side of the knowledge graph's messages: the wire rows the entity view gets,
and the user's changes turned into calls on the editor (real stores on LanceDB)."""

from __future__ import annotations

import pytest

from assistant.agent.tools import MemorySearch, Stores, by_name
from assistant.protocol.graph import EntityOpen, EntityQuery, FactChange, FactUndo
from assistant.service.desks.common import MEMORY_ERRORS
from assistant.service.desks.graph import GraphDesk, answer
from memory.graph.edit import FactEditError
from tests.memory_helpers import store_fact


def test_entities_are_listed_by_facts_searched_by_name_and_paged(stores: Stores) -> None:
    said = stores.stream.add("User: Aya lives in Parma and works as a nurse.", source="user")
    store_fact(stores.graph, "Aya", "lives in", "Parma", (said.id,))
    store_fact(stores.graph, "Aya", "works as", "nurse", (said.id,))
    stores.graph.add_alias(stores.graph.entity_named("Aya"), "my sister")  # type: ignore[arg-type]
    desk = GraphDesk(stores)
    page = desk.entities(EntityQuery(ref="r"))
    assert [(r.name, r.current) for r in page.rows] == [("Aya", 2), ("nurse", 1), ("Parma", 1)]
    assert [r.name for r in desk.entities(EntityQuery(ref="r", query="SISTER")).rows] == ["Aya"]
    second = desk.entities(EntityQuery(ref="r", page=2, page_size=2))
    assert second.total == 3 and [r.name for r in second.rows] == ["Parma"]
    aya = page.rows[0]
    detail = desk.entity(EntityOpen(ref="r", id=aya.id))
    assert detail.entity.aliases == ["my sister"]
    assert {f.memories[0].text for f in detail.facts} == {said.text}


def test_changes_and_undo_come_back_in_words_and_refusals_are_one_line(stores: Stores) -> None:
    fact = store_fact(stores.graph, "Aya", "lives in", "pasta")
    reply, changed = answer(
        stores, FactChange(ref="r", id=fact.id, action="correct", object="Parma")
    )
    assert reply.type == "fact_done"
    assert changed == (fact.id, 'corrected the fact "Aya lives in pasta" to "Aya lives in Parma"')
    _, changed = answer(stores, FactChange(ref="r", id=fact.id, action="retire"))
    assert changed is not None and "no longer holds" in changed[1]
    [retired, _corrected] = GraphDesk(stores).editor.changes([fact.id])
    _, changed = answer(stores, FactUndo(ref="r", change_id=retired.id))
    assert (
        changed is not None and changed[1] == 'undid a change to a fact: now "Aya lives in Parma"'
    )
    for bad in (
        FactChange(ref="r", id="missing", action="retire"),
        FactChange(ref="r", id=fact.id, action="reinstate"),
        FactUndo(ref="r", change_id=retired.id),
        EntityOpen(ref="r", id="missing"),
    ):
        with pytest.raises(FactEditError) as refused:
            answer(stores, bad)
        assert isinstance(refused.value, MEMORY_ERRORS) and "\n" not in str(refused.value)


def test_a_fact_learnt_from_a_document_shows_the_piece_it_came_from(stores: Stores) -> None:
    said = stores.stream.add("User: Aya lives in Parma.", source="user")
    [piece] = stores.archival.insert("Aya Silva has lived in Parma since 2019.", "import", "aya.md")
    fact = store_fact(stores.graph, "Aya", "lives in", "Parma", (said.id, piece))
    [row] = GraphDesk(stores).entity(EntityOpen(ref="r", id=fact.subject)).facts
    assert [m.text for m in row.memories] == [said.text]
    assert [(p.id, p.title, p.text) for p in row.passages] == [
        (piece, "aya.md", "Aya Silva has lived in Parma since 2019.")
    ]
    told = by_name()["graph_search"].run(stores, MemorySearch(query="Where does Aya live?"))
    assert "- Aya lives in Parma" in told
    assert "memories behind them" in told and "User: Aya lives in Parma." in told
    assert "documents behind them" in told and "(aya.md) Aya Silva has lived in Parma" in told
