"""The user's corrections of the knowledge graph (correct, retire, reinstate, undo), on real
LanceDB with the real embedder."""

from __future__ import annotations

import pytest

from memory.graph.edit import FactEditError, FactEditor
from memory.graph.search import graph_search
from memory.graph.store import GraphStore
from tests.memory_helpers import Clock
from tests.memory_helpers import store_fact as fact


def test_a_correction_rewrites_the_fact_and_search_finds_the_new_text(
    graph_store: GraphStore, clock: Clock
) -> None:
    wrong = fact(graph_store, "user", "lives in", "pasta")
    fact(graph_store, "Aya", "works as", "nurse")
    editor = FactEditor(graph_store, clock)
    corrected = editor.correct(wrong.id, obj="Lugano")
    assert corrected.text == "user lives in Lugano"
    assert corrected.episodes == wrong.episodes and corrected.current
    # A new entity for the new name; the stored vector follows the new text.
    assert graph_store.entity_named("lugano") is not None
    found = graph_search(graph_store, "Which city does the user live in?").triplets
    assert found[0].id == wrong.id and found[0].object_name == "Lugano"
    # An existing name is reused, case aside.
    again = editor.correct(wrong.id, subject="aya")
    assert again.subject == graph_store.entity_named("Aya").id  # type: ignore[union-attr]
    [change, first] = editor.changes([wrong.id])
    assert (change.action, first.action) == ("edit", "edit")
    assert first.before["object_name"] == "pasta" and first.after["object_name"] == "Lugano"


def test_retire_reinstate_and_undo_keep_every_step(graph_store: GraphStore, clock: Clock) -> None:
    held = fact(graph_store, "Aya", "lives in", "Parma")
    editor = FactEditor(graph_store, clock)
    retired = editor.retire(held.id)
    assert retired.valid_until == clock() and not retired.current
    with pytest.raises(FactEditError, match="already in the past"):
        editor.retire(held.id)
    # Retired facts are still found (questions about the past), marked as past.
    [past] = graph_store.get_triplets([held.id])
    assert "(until" in past.describe()
    back = editor.reinstate(held.id)
    assert back.current
    with pytest.raises(FactEditError, match="holds already"):
        editor.reinstate(held.id)
    # Undo the reinstatement: past again; undo the retirement: current again.
    reinstated, retirement = editor.changes([held.id])
    assert (reinstated.action, retirement.action) == ("restore", "retire")
    assert not editor.undo(reinstated.id).current
    assert editor.undo(retirement.id).current
    assert graph_store.get_triplets([held.id])[0].current
    with pytest.raises(FactEditError, match="already undone"):
        editor.undo(retirement.id)
    undone = [c for c in editor.changes([held.id]) if c.undone]
    assert {c.id for c in undone} == {reinstated.id, retirement.id}


def test_an_undone_correction_brings_the_old_text_back(
    graph_store: GraphStore, clock: Clock
) -> None:
    held = fact(graph_store, "Tor", "drives", "Opel")
    editor = FactEditor(graph_store, clock)
    editor.correct(held.id, relation="owns", obj="Talbot")
    [change] = editor.changes([held.id])
    restored = editor.undo(change.id)
    assert restored.text == "Tor drives Opel"
    assert graph_store.get_triplets([held.id])[0].text == "Tor drives Opel"
    found = graph_search(graph_store, "What car does Tor drive?").triplets
    assert found[0].text == "Tor drives Opel"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"relation": "   "}, "relation is 1 to"),
        ({"obj": "x" * 61}, "object is 1 to"),
        ({"obj": "Aya"}, "two different things"),
        ({"relation": "LIVES   in"}, "nothing changed"),
    ],
)
def test_bad_corrections_are_refused_and_change_nothing(
    graph_store: GraphStore, clock: Clock, change: dict[str, str], message: str
) -> None:
    held = fact(graph_store, "Aya", "lives in", "Parma")
    editor = FactEditor(graph_store, clock)
    with pytest.raises(FactEditError, match=message):
        editor.correct(held.id, **change)
    assert graph_store.get_triplets([held.id])[0] == held
    assert editor.changes([held.id]) == []
    with pytest.raises(FactEditError, match="no fact"):
        editor.retire("missing")
