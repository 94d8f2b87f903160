"""Graph search, as AriGraph's Algorithms 1 and 2.

1. **Semantic search**: the ``k`` triplets nearest the query (by the embedding of their text)
   are the start. Then, ``depth`` times, the entities of the triplets found last are expanded:
   for each, its incident triplets not found yet, the ``width`` nearest the query among them.
2. **Episodic search**: every memory linked to a found triplet is scored
   ``rel = n / max(N, 1) * log(max(N, 1))``, n the found triplets it gave, N all the triplets it
   gave: a memory that gave many facts, most of them found, ranks first. (A memory that gave one
   fact scores 0, as in the paper; ties are broken by n.)

Past facts (``valid_until`` set) are found like current ones, so "what was Casimir's old
address?" works; each comes back marked, and the current facts are listed first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from memory.graph.store import GraphStore, Triplet
from memory.scoring import cosine


@dataclass(frozen=True)
class GraphSearchConfig:
    k: int = 6
    depth: int = 2
    width: int = 3
    episodes: int = 5


# The search behind GraphRelevance: more episodes than the agent's tool shows, as each is only
# one more signal among the memory retrieval's.
RETRIEVAL_GRAPH_SEARCH = GraphSearchConfig(episodes=10)


@dataclass(frozen=True)
class ScoredEpisode:
    record_id: str
    score: float
    found: int  # n: the found triplets it gave
    size: int  # N: all the triplets it gave


@dataclass(frozen=True)
class GraphResult:
    triplets: tuple[Triplet, ...]  # current facts first, then in the order found
    episodes: tuple[ScoredEpisode, ...]  # best first


def episode_score(found: int, size: int) -> float:
    size = max(size, 1)
    return found / size * math.log(size)


def graph_search(
    store: GraphStore,
    query: str,
    config: GraphSearchConfig = GraphSearchConfig(),
    vector: NDArray[np.float32] | None = None,
) -> GraphResult:
    """``vector``: the query's embedding, when the caller has it already."""
    if vector is None:
        vector = store.embedder.embed([query])[0]
    found = store.nearest_triplets(vector, config.k)
    seen = {t.id for t in found}
    visited: set[str] = set()
    frontier = _entities_of(found)
    for _ in range(config.depth):
        frontier -= visited
        if not frontier:
            break
        visited |= frontier
        incident = [t for t in store.triplets_about(sorted(frontier)) if t.id not in seen]
        added = _nearest_per_entity(store, vector, incident, frontier, config.width)
        found += added
        seen.update(t.id for t in added)
        frontier = _entities_of(added)
    ordered = sorted(found, key=lambda t: not t.current)
    return GraphResult(tuple(ordered), tuple(_episodes(store, found, config.episodes)))


def _entities_of(triplets: Sequence[Triplet]) -> set[str]:
    return {entity for t in triplets for entity in (t.subject, t.object)}


def _nearest_per_entity(
    store: GraphStore,
    vector: np.ndarray,
    incident: Sequence[Triplet],
    entities: set[str],
    width: int,
) -> list[Triplet]:
    """For each entity, the ``width`` of its incident triplets nearest the query."""
    if not incident:
        return []
    vectors = store.triplet_vectors([t.id for t in incident])
    similarity = cosine(vector, np.stack([vectors[t.id] for t in incident]))
    order = np.argsort(-similarity, kind="stable")
    chosen: list[Triplet] = []
    for entity in sorted(entities):
        mine = [incident[i] for i in order if entity in (incident[i].subject, incident[i].object)]
        chosen += [t for t in mine[:width] if t not in chosen]
    return chosen


def _episodes(store: GraphStore, found: Sequence[Triplet], limit: int) -> list[ScoredEpisode]:
    counts: dict[str, int] = {}
    for triplet in found:
        for record_id in triplet.episodes:
            counts[record_id] = counts.get(record_id, 0) + 1
    sizes = store.episode_sizes(sorted(counts))
    scored = [
        ScoredEpisode(
            record_id, episode_score(n, sizes.get(record_id, n)), n, sizes.get(record_id, n)
        )
        for record_id, n in counts.items()
    ]
    scored.sort(key=lambda e: (-e.score, -e.found))
    return scored[:limit]


class GraphRelevance:
    """The knowledge graph as a relevance source for the memory stream's retrieval
    (``MemoryStream(graph=...)``, weighed by ``MemoryConfig.graph_weight``): the episodes a
    graph search ranks, the best 1, the next ones less, down to 1/``config.episodes``."""

    def __init__(self, store: GraphStore, config: GraphSearchConfig) -> None:
        self._store = store
        self._config = config

    def __call__(self, query: str, vector: NDArray[np.float32]) -> dict[str, float]:
        episodes = graph_search(self._store, query, self._config, vector).episodes
        count = max(self._config.episodes, 1)
        return {e.record_id: 1.0 - rank / count for rank, e in enumerate(episodes)}
