"""Retrieval: the records that best answer a query by the Generative Agents score, recency +
importance + relevance, each term min-max normalised over every record the filters allow or
over a candidate list read from the indices, plus utility on its fixed scale (memory.scoring)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from memory.embedder import Embedder
from memory.mirror import to_us
from memory.records import Clock, MemoryRecord
from memory.scoring import (
    FloatArray,
    RetrievalWeights,
    cosine,
    min_max,
    recency,
    utility_term,
    weighted_sum,
)
from memory.stream.candidates import Candidates
from memory.stream.config import MemoryConfig
from memory.stream.filters import Filters
from memory.stream.query_text import lexical_query, query_names, without_names
from memory.stream.relevance import AskedQuery, Relevance
from memory.stream.stored import StoredRecords
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
    # Stored utility over its bound, in [-1, 1] (not min-max normalised).
    utility: float
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
        relevance: Relevance,
        candidates: Candidates,
    ) -> None:
        self.config = config
        self.graph = graph
        self._stored = stored
        self._mirror = stored.mirror
        self._embedder = embedder
        self._clock = clock
        self._relevance = relevance
        self._candidates = candidates
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
        allow (``config.exact_scoring``) or else over a candidate list, + utility over its
        bound; those returned get last_accessed_at = now."""
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
            positions, relevance_values, similarity_values = self._candidates.relevance(
                asked, self.config, text_hits, filters, weights, now, allowed
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
            utility_term(mirror.utility[positions], self.config.utility_bound),
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
                utility=float(normalised[3][i]),
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

    def mark_accessed(self, record_ids: Sequence[str]) -> None:
        """The records were used (as ``retrieve`` marks what it returns): last_accessed_at =
        now. For a caller that retrieved with ``touch=False`` and used only some."""
        self._stored.touch(list(dict.fromkeys(record_ids)), self._clock())


def _best(scores: FloatArray, k: int) -> NDArray[np.int64]:
    """Indices of the ``k`` highest scores, highest first (ties: the lower index first)."""
    if scores.size > k:
        top = np.argpartition(-scores, k - 1)[:k]
        top.sort()
    else:
        top = np.arange(scores.size)
    ordered: NDArray[np.int64] = top[np.argsort(-scores[top], kind="stable")].astype(np.int64)
    return ordered
