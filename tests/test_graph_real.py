"""The knowledge graph with the default profile's local model (1.5B) on a two-turn conversation:
real extraction, entity resolution and replacement, real LanceDB and embedder."""

from __future__ import annotations

import pytest

from assistant.llm.client import LLMClient
from memory.graph.graph import KnowledgeGraph
from memory.graph.search import graph_search
from memory.graph.store import GraphStore
from memory.stream import MemoryStream

pytestmark = pytest.mark.slow

CONVERSATION = [
    "User: My sister Aya lives in Parma and works as a nurse.",
    "User: Big news: Aya moved to Lugano.",
]


def test_the_local_model_learns_a_short_conversation(
    quality_llm: LLMClient, stream: MemoryStream, graph_store: GraphStore
) -> None:
    said = [stream.add(text, source="user") for text in CONVERSATION]
    graph = KnowledgeGraph(graph_store, graph_store.embedder, quality_llm)
    learnt = graph.learn(said)
    assert learnt.read == 2 and learnt.triplets >= 2
    entities, _ = graph_store.all_entities()
    triplets = graph_store.triplets_about([e.id for e in entities])
    by_memory = {r.id: [t.text for t in triplets if r.id in t.episodes] for r in said}
    # Each fact is credited to the memory that said it.
    assert any("Parma" in text for text in by_memory[said[0].id]), by_memory
    assert any("Lugano" in text for text in by_memory[said[1].id]), by_memory
    assert not any("Lugano" in text for text in by_memory[said[0].id]), by_memory
    # Aya is one entity, and a search for where she lives starts from her facts.
    assert sum(e.name.casefold() == "aya" for e in entities) == 1
    found = graph_search(graph_store, "Where does Aya live?").triplets[:3]
    assert any("Lugano" in t.text or "Parma" in t.text for t in found), found
    assert graph.unread(said) == []
