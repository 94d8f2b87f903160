"""Relevance of records to a query, in the modes MemoryConfig.relevance names: cosine, BM25,
their blend or rank fusion, and the contextual blend (names and episode neighbours)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from memory.embedder import Embedder
from memory.mirror import RecordMirror
from memory.scoring import FloatArray, min_max, reciprocal_rank
from memory.stream.config import MemoryConfig
from memory.stream.episodes import Episodes
from memory.stream.query_text import without_names
from memory.text import MAX_EMBED_CHARS


@dataclass(frozen=True)
class AskedQuery:
    text: str
    vector: NDArray[np.float32]
    # Capitalised words that may name people (contextual relevance), and the vector of the
    # query without them (None: no names, or nothing but question words left).
    names: tuple[str, ...] = ()
    without_names: NDArray[np.float32] | None = None
    # Memories the knowledge graph found for the query, with their graph score (0-1).
    graph_hits: dict[str, float] = field(default_factory=dict)


# Which records open with which of the query's names, and which names opened any.
SubjectsOf = Callable[[Sequence[str]], tuple[NDArray[np.bool_], tuple[str, ...]]]
# The cosine similarity of each record's vector to a query vector.
SimilarityTo = Callable[[NDArray[np.float32]], FloatArray]


class Relevance:
    def __init__(self, mirror: RecordMirror, embedder: Embedder, episodes: Episodes) -> None:
        self._mirror = mirror
        self._embedder = embedder
        self._episodes = episodes

    def measure(
        self,
        asked: AskedQuery,
        config: MemoryConfig,
        positions: NDArray[np.int64],
        lexical: FloatArray,
        subjects_of: SubjectsOf,
        similarity_to: SimilarityTo,
    ) -> FloatArray:
        """Relevance of each record (at mirror ``positions``) to the query, as
        ``config.relevance`` says, from the cosine similarity of its vector
        (``similarity_to``) and its BM25 score (``lexical``, 0 outside the hits):

        * cosine: the cosine similarity; text: the BM25 score;
        * hybrid: (1 - s) * min-max(cosine) + s * min-max(BM25), s = ``text_weight``;
        * rrf: (1 - s) / (rrf_k + cosine rank) + s / (rrf_k + BM25 rank) (0 outside the hits);
        * contextual: hybrid, where a query name that opens records (``subjects_of``: "Anna:
          ...", "Anna moved ...") adds ``subject_boost`` to those records, and the cosine term
          is the mean of the cosine to the query and to the query without those names (the
          name is matched exactly, the vector then measures what is asked about that person);
          then each record gets ``context_weight ** d`` of the better of its two neighbours'
          values at distance d.
        """
        mode = config.relevance
        if mode == "text":
            return lexical
        if mode == "cosine":
            return similarity_to(asked.vector)
        share = config.text_weight
        if mode == "rrf":
            fused: FloatArray = (1 - share) * reciprocal_rank(
                similarity_to(asked.vector), config.rrf_k
            ) + share * np.where(lexical > 0, reciprocal_rank(lexical, config.rrf_k), 0.0)
            return fused
        subjects: NDArray[np.bool_] = np.zeros(positions.size, dtype=bool)
        direction = _unit(asked.vector)
        if mode == "contextual" and asked.names:
            subjects, names = subjects_of(asked.names)
            rest = asked.without_names
            if names and set(names) != set(asked.names):
                # Only some of the capitalised words name someone here: leave out just those.
                text = without_names(asked.text, names)[:MAX_EMBED_CHARS]
                rest = self._embedder.embed([text])[0] if text else None
            if names and rest is not None:
                # cos(v, q) + cos(v, r) = cos(v, q/|q| + r/|r|) * |q/|q| + r/|r||: one pass
                # over the vectors gives the mean up to a positive factor, which min-max drops.
                direction = direction + _unit(rest)
        blended: FloatArray = (1 - share) * min_max(similarity_to(direction)) + share * min_max(
            lexical
        )
        if asked.graph_hits:
            blended = blended + config.graph_weight * self.spread(asked.graph_hits, positions)
        if mode != "contextual":
            return blended
        blended = blended + config.subject_boost * subjects
        return self._episodes.with_context(blended, positions, config)

    def spread(self, values: dict[str, float], positions: NDArray[np.int64]) -> FloatArray:
        """``values`` (by record id) laid out over the records at mirror ``positions``; 0 for
        the records it does not name."""
        spread = np.zeros(positions.size, dtype=np.float64)
        if not values or positions.size == 0:
            return spread
        places = self._mirror.positions(list(values))
        order = np.argsort(positions, kind="stable")
        ordered = positions[order]
        index = np.clip(np.searchsorted(ordered, places), 0, positions.size - 1)
        found = (places >= 0) & (ordered[index] == places)
        spread[order[index[found]]] = np.fromiter(values.values(), dtype=np.float64)[found]
        return spread


def _unit(vector: NDArray[np.float32]) -> NDArray[np.float32]:
    length = float(np.linalg.norm(vector))
    unit: NDArray[np.float32] = (vector / length if length > 0 else vector).astype(np.float32)
    return unit
