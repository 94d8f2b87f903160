"""The candidates retrieval scores when it does not score every record (``exact_scoring`` off,
or a mirror loaded without its vectors): the nearest by vector, the best by BM25, the knowledge
graph's finds, their episode neighbours and the best by recency, importance and utility."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from datetime import datetime

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from memory.mirror import to_us
from memory.scoring import FloatArray, RetrievalWeights, cosine, min_max, recency, utility_term
from memory.stream.config import MemoryConfig
from memory.stream.episodes import Episodes
from memory.stream.filters import Filters
from memory.stream.query_text import opening_names
from memory.stream.relevance import AskedQuery, Relevance
from memory.stream.stored import StoredRecords
from memory.table import in_list


class Candidates:
    def __init__(self, stored: StoredRecords, episodes: Episodes, relevance: Relevance) -> None:
        self._stored = stored
        self._mirror = stored.mirror
        self._episodes = episodes
        self._relevance = relevance

    def relevance(
        self,
        asked: AskedQuery,
        config: MemoryConfig,
        text_hits: Future[dict[str, float]] | None,
        filters: Filters,
        weights: RetrievalWeights,
        now: datetime,
        allowed: NDArray[np.bool_],
    ) -> tuple[NDArray[np.int64], FloatArray, FloatArray]:
        """The candidates' mirror places, relevance and cosine similarity to the query, read
        from the table."""
        candidate_ids, lexical = self._candidates(
            asked, config, text_hits, filters, weights, now, allowed
        )
        empty = np.zeros(0, dtype=np.int64)
        if not candidate_ids:
            return empty, np.zeros(0, dtype=np.float64), np.zeros(0, dtype=np.float64)
        rows = self._stored.table.query(
            where=_and(in_list("id", candidate_ids), filters.where()),
            columns=["id", "text", "vector"],
            limit=len(candidate_ids),
        )
        ids = rows.column("id").to_pylist()
        positions = self._mirror.positions(ids)
        known = positions >= 0
        if not known.all():  # written by another process since this one loaded the mirror
            rows = rows.filter(pa.array(known))
            ids = [i for i, kept in zip(ids, known, strict=True) if kept]
            positions = positions[known]
        if not ids:
            return empty, np.zeros(0, dtype=np.float64), np.zeros(0, dtype=np.float64)
        column = rows.column("vector").combine_chunks()
        vectors = column.flatten().to_numpy().astype(np.float32).reshape(len(column), -1)

        def similarity_to(vector: NDArray[np.float32]) -> FloatArray:
            return cosine(vector, vectors)

        def subjects_of(names: Sequence[str]) -> tuple[NDArray[np.bool_], tuple[str, ...]]:
            return opening_names(rows.column("text"), names)

        lexical_values = np.array([lexical.get(i, 0.0) for i in ids], dtype=np.float64)
        relevance = self._relevance.measure(
            asked, config, positions, lexical_values, subjects_of, similarity_to
        )
        return positions, relevance, similarity_to(asked.vector)

    def _candidates(
        self,
        asked: AskedQuery,
        config: MemoryConfig,
        text_hits: Future[dict[str, float]] | None,
        filters: Filters,
        weights: RetrievalWeights,
        now: datetime,
        allowed: NDArray[np.bool_],
    ) -> tuple[list[str], dict[str, float]]:
        """The records worth scoring: the nearest by vector, the best by BM25, their episode
        neighbours (contextual relevance), and the best by the query-independent terms; with
        the BM25 score of each text hit."""
        where = filters.where()
        found: dict[str, None] = {}
        lexical: dict[str, float] = {}
        mode = config.relevance
        if weights.relevance:
            by_vector = self._stored.table.vector_search(
                asked.vector.tolist(), config.vector_candidates, where, ["id"]
            )
            found.update(dict.fromkeys(by_vector.column("id").to_pylist()))
            if text_hits is not None:
                lexical = text_hits.result()
                found.update(dict.fromkeys(lexical))
            found.update(dict.fromkeys(asked.graph_hits))
            if mode == "contextual" and config.context_weight > 0:
                positions = self._mirror.positions(list(found))
                near = self._episodes.neighbours(positions[positions >= 0], config, allowed)
                mirror_ids = self._mirror.ids
                found.update(dict.fromkeys(mirror_ids[i] for i in np.unique(near[near >= 0])))
        found.update(dict.fromkeys(self._static_candidates(config, weights, now, allowed)))
        return list(found), lexical

    def _static_candidates(
        self,
        config: MemoryConfig,
        weights: RetrievalWeights,
        now: datetime,
        allowed: NDArray[np.bool_],
    ) -> list[str]:
        """The best records by the query-independent terms (recency, importance, utility),
        among those the filters allow; none when they all weigh nothing."""
        if not (weights.recency or weights.importance or weights.utility):
            return []
        mirror = self._mirror
        positions = np.flatnonzero(allowed)
        if positions.size == 0:
            return []
        static = (
            weights.recency * min_max(recency(mirror.last_accessed_us[positions], to_us(now)))
            + weights.importance * min_max(mirror.importance[positions])
            + weights.utility * utility_term(mirror.utility[positions], config.utility_bound)
        )
        count = min(config.static_candidates, positions.size)
        best = positions[np.argpartition(-static, count - 1)[:count]]
        return [mirror.ids[i] for i in best]


def _and(*clauses: str | None) -> str:
    return " AND ".join(c for c in clauses if c)
