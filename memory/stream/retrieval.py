"""Retrieval: the records that best answer a query by the Generative Agents score, recency +
importance + relevance, each term min-max normalised over every record the filters allow or
over a candidate list read from the indices."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from memory.embedder import Embedder
from memory.mirror import to_us
from memory.records import Clock, MemoryRecord
from memory.scoring import FloatArray, RetrievalWeights, cosine, min_max, recency, weighted_sum
from memory.stream.config import MemoryConfig
from memory.stream.episodes import Episodes
from memory.stream.filters import Filters
from memory.stream.query_text import lexical_query, opening_names, query_names, without_names
from memory.stream.relevance import AskedQuery, Relevance
from memory.stream.stored import StoredRecords
from memory.table import in_list
from memory.text import MAX_EMBED_CHARS, storable_text

log = logging.getLogger(__name__)


class GraphSource(Protocol):
    """Memories a knowledge graph finds for a query: record id -> score in (0, 1]."""

    def __call__(self, query: str, vector: NDArray[np.float32]) -> dict[str, float]: ...


@dataclass(frozen=True)
class ScoredMemory:
    record: MemoryRecord
    score: float
    recency: float
    importance: float
    relevance: float
    # The cosine similarity of the record's embedding to the query's, unnormalised: how near
    # it is in meaning, whatever else the query found (min-max makes the best one 1).
    similarity: float


class Retrieval:
    def __init__(
        self,
        stored: StoredRecords,
        embedder: Embedder,
        clock: Clock,
        config: MemoryConfig,
        graph: GraphSource | None,
        episodes: Episodes,
        relevance: Relevance,
    ) -> None:
        self.config = config
        self.graph = graph
        self._stored = stored
        self._mirror = stored.mirror
        self._embedder = embedder
        self._clock = clock
        self._episodes = episodes
        self._relevance = relevance
        self._searches = ThreadPoolExecutor(1, thread_name_prefix="memory-search")

    def close(self) -> None:
        self._searches.shutdown(wait=True)

    def retrieve(
        self,
        query: str,
        k: int = 10,
        filters: Filters | None = None,
        weights: RetrievalWeights | None = None,
        touch: bool = True,
    ) -> list[ScoredMemory]:
        """The top ``k`` records by recency + importance + relevance (relevance measured as
        ``config.relevance`` says), each term min-max normalised over every record the filters
        allow (``config.exact_scoring``) or else over a candidate list; those returned get
        last_accessed_at = now."""
        filters = filters or Filters()
        weights = weights or self.config.weights
        now = self._clock()
        text = storable_text(query)
        allowed = self._stored.allowed(filters)
        # The full-text search needs no vector: it waits on LanceDB while the query is embedded
        # and numpy scores.
        text_hits = (
            self._searches.submit(self._text_hits, text, filters.where())
            if weights.relevance and self.config.relevance != "cosine" and allowed.any()
            else None
        )
        asked = self._asked(text)
        if self.config.exact_scoring and self._mirror.has_vectors:
            positions, relevance_values = self._relevance_everywhere(
                asked, text_hits, weights, allowed
            )
            similarity_values = None
        else:
            positions, relevance_values, similarity_values = self._relevance_of_candidates(
                asked, text_hits, filters, weights, now, allowed
            )
        if positions.size == 0:
            return []
        mirror = self._mirror
        recency_values = recency(mirror.last_accessed_us[positions], to_us(now))
        importance_values = mirror.importance[positions]
        normalised = (
            min_max(recency_values),
            min_max(importance_values),
            min_max(relevance_values),
        )
        scores = weighted_sum(normalised, weights)
        order = _best(scores, k)
        chosen = positions[order]
        if touch:
            self._stored.touch([mirror.ids[i] for i in chosen], now)
        similarity = (
            cosine(asked.vector, mirror.directions[chosen])
            if similarity_values is None
            else similarity_values[order]
        )
        return [
            ScoredMemory(
                record=record,
                score=float(scores[i]),
                recency=float(normalised[0][i]),
                importance=float(normalised[1][i]),
                relevance=float(normalised[2][i]),
                similarity=float(near),
            )
            for i, near, record in zip(
                order, similarity, self._stored.at(chosen.tolist()), strict=True
            )
        ]

    def _asked(self, query: str) -> AskedQuery:
        """The query embedded, with its names when contextual relevance uses them (the query
        without the names is embedded in the same batch)."""
        config = self.config
        names = (
            query_names(query) if config.relevance == "contextual" and config.subject_boost else ()
        )
        rest = without_names(query, names)[:MAX_EMBED_CHARS] if names else ""
        vectors = self._embedder.embed([query[:MAX_EMBED_CHARS] or " ", *([rest] if rest else [])])
        graph_hits = (
            self._graph_hits(query, vectors[0])
            if config.graph_weight > 0 and config.relevance in ("hybrid", "contextual")
            else {}
        )
        return AskedQuery(query, vectors[0], names, vectors[1] if rest else None, graph_hits)

    def _graph_hits(self, query: str, vector: NDArray[np.float32]) -> dict[str, float]:
        if self.graph is None:
            return {}
        try:
            return self.graph(query, vector)
        except Exception as error:  # a broken graph must not stop the memory answering
            log.warning("knowledge graph search failed for %r: %s", query[:80], error)
            return {}

    def _relevance_everywhere(
        self,
        asked: AskedQuery,
        text_hits: Future[dict[str, float]] | None,
        weights: RetrievalWeights,
        allowed: NDArray[np.bool_],
    ) -> tuple[NDArray[np.int64], FloatArray]:
        """Every allowed record's mirror place and relevance, the cosine term from the mirror's
        vectors, the BM25 term from the text index's best hits (``text_hits``; 0 for the
        rest)."""
        positions = np.flatnonzero(allowed).astype(np.int64)
        if not weights.relevance or positions.size == 0:
            return positions, np.zeros(positions.size, dtype=np.float64)
        mirror = self._mirror
        everyone = positions.size == len(mirror)

        def subset(values: NDArray[Any]) -> NDArray[Any]:
            return values if everyone else values[positions]

        def similarity_to(vector: NDArray[np.float32]) -> FloatArray:
            return subset(mirror.similarity(vector)).astype(np.float64)

        def subjects_of(names: Sequence[str]) -> tuple[NDArray[np.bool_], tuple[str, ...]]:
            subjects = np.zeros(positions.size, dtype=bool)
            opened = []
            for name in names:
                opens = subset(mirror.opens_with(name))
                if opens.any():
                    subjects |= opens
                    opened.append(name)
            return subjects, tuple(opened)

        lexical = self._relevance.spread(
            text_hits.result() if text_hits is not None else {}, positions
        )
        relevance = self._relevance.measure(
            asked, self.config, positions, lexical, subjects_of, similarity_to
        )
        return positions, relevance

    def _relevance_of_candidates(
        self,
        asked: AskedQuery,
        text_hits: Future[dict[str, float]] | None,
        filters: Filters,
        weights: RetrievalWeights,
        now: datetime,
        allowed: NDArray[np.bool_],
    ) -> tuple[NDArray[np.int64], FloatArray, FloatArray]:
        """The candidates' mirror places, relevance and cosine similarity to the query, read
        from the table."""
        candidate_ids, lexical = self._candidates(asked, text_hits, filters, weights, now, allowed)
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
            asked, self.config, positions, lexical_values, subjects_of, similarity_to
        )
        return positions, relevance, similarity_to(asked.vector)

    def _text_hits(self, query: str, where: str | None) -> dict[str, float]:
        """The best records by BM25 (``text_candidates`` of them), with their scores."""
        terms = lexical_query(query)
        if not terms:
            return {}
        try:
            by_text = self._stored.table.text_search(
                terms, self.config.text_candidates, where, ["id"]
            )
        except Exception as error:  # a query the FTS index rejects still gets vector hits
            log.warning("text search failed for %r: %s", terms[:80], error)
            return {}
        scores = by_text.column("_score").to_numpy().astype(np.float64).tolist()
        return dict(zip(by_text.column("id").to_pylist(), scores, strict=True))

    def _candidates(
        self,
        asked: AskedQuery,
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
        mode = self.config.relevance
        if weights.relevance:
            by_vector = self._stored.table.vector_search(
                asked.vector.tolist(), self.config.vector_candidates, where, ["id"]
            )
            found.update(dict.fromkeys(by_vector.column("id").to_pylist()))
            if text_hits is not None:
                lexical = text_hits.result()
                found.update(dict.fromkeys(lexical))
            found.update(dict.fromkeys(asked.graph_hits))
            if mode == "contextual" and self.config.context_weight > 0:
                positions = self._mirror.positions(list(found))
                near = self._episodes.neighbours(positions[positions >= 0], self.config, allowed)
                mirror_ids = self._mirror.ids
                found.update(dict.fromkeys(mirror_ids[i] for i in np.unique(near[near >= 0])))
        found.update(dict.fromkeys(self._static_candidates(weights, now, allowed)))
        return list(found), lexical

    def _static_candidates(
        self, weights: RetrievalWeights, now: datetime, allowed: NDArray[np.bool_]
    ) -> list[str]:
        """The best records by the query-independent terms (recency and importance), among
        those the filters allow; none when both terms weigh nothing."""
        if not (weights.recency or weights.importance):
            return []
        mirror = self._mirror
        positions = np.flatnonzero(allowed)
        if positions.size == 0:
            return []
        static = weights.recency * min_max(
            recency(mirror.last_accessed_us[positions], to_us(now))
        ) + weights.importance * min_max(mirror.importance[positions])
        count = min(self.config.static_candidates, positions.size)
        best = positions[np.argpartition(-static, count - 1)[:count]]
        return [mirror.ids[i] for i in best]

    def mark_accessed(self, record_ids: Sequence[str]) -> None:
        """The records were used (as ``retrieve`` marks what it returns): last_accessed_at =
        now. For a caller that retrieved with ``touch=False`` and used only some."""
        self._stored.touch(list(dict.fromkeys(record_ids)), self._clock())


def _and(*clauses: str | None) -> str:
    return " AND ".join(c for c in clauses if c)


def _best(scores: FloatArray, k: int) -> NDArray[np.int64]:
    """Indices of the ``k`` highest scores, highest first (ties: the lower index first)."""
    if scores.size > k:
        top = np.argpartition(-scores, k - 1)[:k]
        top.sort()
    else:
        top = np.arange(scores.size)
    ordered: NDArray[np.int64] = top[np.argsort(-scores[top], kind="stable")].astype(np.int64)
    return ordered
