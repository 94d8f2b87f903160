"""The memory stream: the one API over the assistant's long-term memory.

Add a record (committed before ``add`` returns; importance rated later in the background),
retrieve by the Generative Agents score, and list / search / edit / delete / restore / undo, with
every change kept in a history. Imports nothing from ``assistant`` or ``ui``: the embedder, the
LLM and the clock are handed in.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from memory.embedder import Embedder
from memory.history import HISTORY_SCHEMA, Change, History, new_change
from memory.importance import Rating
from memory.locking import WriteLock
from memory.mirror import RecordMirror, openers, to_us
from memory.paging import Page, page_bounds
from memory.records import (
    DEFAULT_IMPORTANCE,
    KINDS,
    Clock,
    ImportanceState,
    Kind,
    MemoryRecord,
    SortKey,
    is_valid_source,
    records_schema,
    utc_now,
)
from memory.rerating import ImportanceRating, Rerating
from memory.scoring import (
    FloatArray,
    RetrievalWeights,
    cosine,
    min_max,
    recency,
    reciprocal_rank,
    weighted_sum,
)
from memory.table import Table, in_list, quote
from memory.text import MAX_EMBED_CHARS, storable_text
from memory.timeparse import resolve_event_time

log = logging.getLogger(__name__)

RelevanceMode = Literal["cosine", "text", "hybrid", "rrf", "contextual"]
EDITABLE = ("text", "importance", "pinned", "kind", "event_time")


class MemoryRequestError(Exception):
    """A request the memory cannot carry out (unknown id, bad value); the message says which."""


@dataclass(frozen=True)
class MemoryConfig:
    weights: RetrievalWeights = field(default_factory=RetrievalWeights)
    # How relevance to the query is measured (recall on LoCoMo: python -m benchmarks.locomo):
    # cosine: cosine similarity of the MiniLM vectors;
    # text: BM25 (LanceDB full-text search);
    # hybrid: (1 - text_weight) * min-max(cosine) + text_weight * min-max(BM25);
    # rrf: reciprocal-rank fusion of the two rankings, same shares, constant rrf_k;
    # contextual (default): hybrid, plus the query's names (subject_boost) and the record's
    #   neighbours in its episode (context_weight); see MemoryStream._relevance.
    relevance: RelevanceMode = "contextual"
    # Share of the lexical (BM25) signal in hybrid, rrf and contextual relevance.
    text_weight: float = 0.5
    rrf_k: int = 60
    # contextual: a capitalised word of the query that opens records (the speaker of "Anna: ...",
    # the subject of "Anna moved ...") adds this to their relevance (on the 0-1 scale of the
    # blend), and half of the cosine term is measured on the query without those names.
    # 0 turns this off.
    subject_boost: float = 0.5
    # contextual: a record also gets context_weight ** d of the relevance of the records d
    # places before and after it in creation order (the better side; d <= context_radius),
    # when they are of the same kind and created within context_gap_seconds of it: the turns
    # around a conversation turn answer or explain it. 0 turns this off.
    context_weight: float = 0.5
    context_radius: int = 2
    context_gap_seconds: float = 1800.0
    # Score every record the filters allow, from an in-memory copy of the vectors (1.5 KB of
    # RAM a record: 150 MB at 100k), so each term is min-max normalised over all of them and
    # the top k is exact. False: score a candidate list read from the indices (the
    # vector_candidates nearest, the static_candidates best by recency and importance, and
    # their episode neighbours); less memory, normalised over the candidates only. Both take
    # BM25 scores from the text_candidates best text hits.
    exact_scoring: bool = True
    # hybrid and contextual: the memories a knowledge-graph search finds for the query (the
    # stream's ``graph`` source; see memory.graph.search.GraphRelevance) add graph_weight times
    # their graph score (0-1) to their relevance. 0, or no source, turns this off.
    graph_weight: float = 0.0
    vector_candidates: int = 100
    text_candidates: int = 100
    static_candidates: int = 50
    duplicate_cosine: float = 0.95
    duplicate_window_hours: float = 24.0


class GraphSource(Protocol):
    """Memories a knowledge graph finds for a query: record id -> score in (0, 1]."""

    def __call__(self, query: str, vector: NDArray[np.float32]) -> dict[str, float]: ...


@dataclass(frozen=True)
class Filters:
    kinds: tuple[Kind, ...] | None = None
    sources: tuple[str, ...] | None = None
    since: datetime | None = None
    until: datetime | None = None
    pinned: bool | None = None
    # False: live records only; True: deleted ones only (to restore them); None: both.
    deleted: bool | None = False

    def where(self) -> str | None:
        clauses = [] if self.deleted is None else [f"deleted = {str(self.deleted).lower()}"]
        if self.kinds:
            clauses.append(in_list("kind", self.kinds))
        if self.pinned is not None:
            clauses.append(f"pinned = {str(self.pinned).lower()}")
        if self.since is not None:
            clauses.append(f"created_at >= {_timestamp(self.since)}")
        if self.until is not None:
            clauses.append(f"created_at <= {_timestamp(self.until)}")
        if self.sources:
            clauses.append(
                "(" + " OR ".join(f"array_has(sources, {quote(s)})" for s in self.sources) + ")"
            )
        return " AND ".join(clauses) or None


@dataclass(frozen=True)
class NewMemory:
    """What a caller asks to remember; see :meth:`MemoryStream.add`."""

    text: str
    kind: Kind = "observation"
    source: str = "user"
    importance: int | None = None
    evidence: tuple[str, ...] = ()
    event_time: datetime | None = None
    created_at: datetime | None = None
    pinned: bool = False


def _validate(item: NewMemory) -> None:
    if not storable_text(item.text):
        raise MemoryRequestError("a memory needs some text")
    if item.kind not in KINDS:
        raise MemoryRequestError(f"unknown kind {item.kind!r}; one of {', '.join(KINDS)}")
    if not is_valid_source(item.source):
        raise MemoryRequestError(f"unknown source {item.source!r}")
    if item.importance is not None and not 1 <= item.importance <= 10:
        raise MemoryRequestError(f"importance must be 1-10, not {item.importance}")


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


@dataclass(frozen=True)
class EvidenceNode:
    record: MemoryRecord
    children: tuple[EvidenceNode, ...]


def _timestamp(moment: datetime) -> str:
    return f"arrow_cast({to_us(moment)}, 'Timestamp(Microsecond, Some(\"UTC\"))')"


class MemoryStream:
    def __init__(
        self,
        database: Any,
        lock: WriteLock,
        embedder: Embedder,
        rating: ImportanceRating | None = None,
        clock: Clock = utc_now,
        config: MemoryConfig | None = None,
        graph: GraphSource | None = None,
    ) -> None:
        self.config = config or MemoryConfig()
        self.graph = graph
        self._embedder = embedder
        self._clock = clock
        self.records = Table(database, "records", records_schema(embedder.dimensions), lock)
        self.history = History(
            Table(database, "history", HISTORY_SCHEMA, lock, text_column=None, vector_column=None)
        )
        self._mirror = RecordMirror()
        self._load_mirror()
        self.records.ensure_indices()
        # Rates each new record as it is stored (None: records wait, unrated, for a scale).
        self._scale = rating.scale if rating is not None else None
        self._rerating = (
            Rerating(self.records, rating.scale, self._apply_ratings, rating.version_file)
            if rating is not None
            else None
        )
        self._searches = ThreadPoolExecutor(1, thread_name_prefix="memory-search")

    def close(self) -> None:
        if self._rerating is not None:
            self._rerating.close()
        self._searches.shutdown(wait=True)

    def __len__(self) -> int:
        return int((~self._mirror.deleted).sum())

    def now(self) -> datetime:
        """The time by the stream's clock (what created_at and last_accessed_at are set to)."""
        return self._clock()

    # Adding

    def add(
        self,
        text: str,
        kind: Kind = "observation",
        source: str = "user",
        *,
        importance: int | None = None,
        evidence: Sequence[str] = (),
        event_time: datetime | None = None,
        created_at: datetime | None = None,
        pinned: bool = False,
    ) -> MemoryRecord:
        """Store a record; returns once it is committed. A near-copy of a recent record of
        the same kind is merged into it instead (both sources kept)."""
        new = NewMemory(
            text, kind, source, importance, tuple(evidence), event_time, created_at, pinned
        )
        return self.add_many([new])[0]

    def add_many(
        self, items: Sequence[NewMemory], merge_duplicates: bool = True
    ) -> list[MemoryRecord]:
        """Store several records in one commit (embedded in one batch); returns them in order,
        a merged near-copy standing for its item."""
        for item in items:
            _validate(item)
        texts = [storable_text(item.text) for item in items]
        vectors = self._embedder.embed([text[:MAX_EMBED_CHARS] for text in texts])
        results: list[MemoryRecord] = []
        fresh: list[MemoryRecord] = []
        for item, text, vector in zip(items, texts, vectors, strict=True):
            now = item.created_at or self._clock()
            duplicate = self._recent_duplicate(vector, item.kind, now) if merge_duplicates else None
            if duplicate is not None:
                results.append(self._merge(duplicate, item.source, now))
                continue
            record = self._new_record(item, text, vector, now)
            fresh.append(record)
            results.append(record)
        if fresh:
            rows = [record.to_row() for record in fresh]
            self.records.add(rows)
            self._mirror.extend(rows)
            self.history.record(
                [new_change(r.id, "add", {}, {"text": r.text}, r.created_at) for r in fresh]
            )
        return results

    def _new_record(
        self, item: NewMemory, text: str, vector: NDArray[np.float32], now: datetime
    ) -> MemoryRecord:
        event_time = item.event_time
        if event_time is None:
            resolved = resolve_event_time(text, now)
            event_time = resolved.when if resolved else None
        importance, state = self._importance(item.importance, text, vector)
        return MemoryRecord(
            id=uuid.uuid4().hex,
            text=text,
            kind=item.kind,
            created_at=now,
            last_accessed_at=now,
            importance=importance,
            importance_state=state,
            sources=(item.source,),
            event_time=event_time,
            evidence=item.evidence,
            pinned=item.pinned,
            updated_at=now,
            embedding=vector,
        )

    def restore_records(self, records: Sequence[MemoryRecord]) -> None:
        """Write records exactly as given (ids, times, ratings; import and undo of a purge).
        A record without an embedding is embedded; one whose id exists is replaced."""
        missing = [r for r in records if r.embedding is None]
        vectors = self._embedder.embed([r.text[:MAX_EMBED_CHARS] for r in missing])
        embedded = {r.id: v for r, v in zip(missing, vectors, strict=True)}
        rows = [
            (r if r.embedding is not None else r.with_changes(embedding=embedded[r.id])).to_row()
            for r in records
        ]
        for start in range(0, len(rows), 10_000):
            self.records.upsert(rows[start : start + 10_000])
        self.records.ensure_indices()
        self._load_mirror()

    def _load_mirror(self) -> None:
        """Every column but the vectors (and those too when every record is scored)."""
        all_but_vector = [name for name in self.records.schema.names if name != "vector"]
        columns = None if self.config.exact_scoring else all_but_vector
        self._mirror.load(self.records.query(columns=columns))

    def _write(self, record_id: str, values: dict[str, Any]) -> None:
        """Change one record's stored values, in the table and in the mirror."""
        self.records.update(f"id = {quote(record_id)}", values)
        self._mirror.set(record_id, **values)

    def _records_at(self, positions: Sequence[int]) -> list[MemoryRecord]:
        """The records at these mirror places (without their vectors)."""
        return [MemoryRecord.from_row(row) for row in self._mirror.rows_at(positions)]

    def _recent_duplicate(
        self, vector: NDArray[np.float32], kind: Kind, now: datetime
    ) -> MemoryRecord | None:
        if not len(self._mirror):
            return None
        since = now.timestamp() - self.config.duplicate_window_hours * 3600
        where = (
            f"deleted = false AND kind = {quote(kind)} AND "
            f"created_at >= {_timestamp(datetime.fromtimestamp(since, now.tzinfo))}"
        )
        found = self.records.vector_search(vector.tolist(), 1, where, ["id"])
        if (
            found.num_rows
            and 1.0 - found.column("_distance")[0].as_py() >= self.config.duplicate_cosine
        ):
            return self.get(found.column("id")[0].as_py())
        return None

    def _merge(self, existing: MemoryRecord, source: str, now: datetime) -> MemoryRecord:
        sources = existing.sources if source in existing.sources else (*existing.sources, source)
        self._write(
            existing.id, {"sources": list(sources), "last_accessed_at": now, "updated_at": now}
        )
        self.history.record(
            [
                new_change(
                    existing.id,
                    "merge",
                    {"sources": list(existing.sources)},
                    {"sources": list(sources)},
                    now,
                )
            ]
        )
        return existing.with_changes(sources=sources, last_accessed_at=now, updated_at=now)

    # Importance

    def _importance(
        self, given: int | None, text: str, vector: NDArray[np.float32]
    ) -> tuple[int, ImportanceState]:
        if given is not None:
            return given, "given"
        if self._scale is None:
            return DEFAULT_IMPORTANCE, "pending"
        return self._scale.rate(text, vector), "rated"

    def _apply_ratings(self, ratings: Sequence[Rating]) -> None:
        """Ratings made again (memory/rerating.py), one write per importance value."""
        if not ratings:
            return
        now = self._clock()
        by_value: dict[int, list[str]] = {}
        for rating in ratings:
            by_value.setdefault(rating.importance, []).append(rating.record_id)
        for importance, ids in by_value.items():
            self.records.update(
                f"{in_list('id', ids)} AND importance_state != 'given'",
                {"importance": importance, "importance_state": "rated"},
            )
        # A rating does not replace an importance the user gave meanwhile: mirror what the
        # table kept.
        kept = self.records.query(
            where=in_list("id", [r.record_id for r in ratings]),
            columns=["id", "importance", "importance_state"],
        )
        for row in kept.to_pylist():
            self._mirror.set(row.pop("id"), **row)
        self.history.record(
            [
                new_change(r.record_id, "rate", {}, {"importance": r.importance}, now)
                for r in ratings
            ]
        )

    def wait_for_ratings(self, timeout: float | None = None) -> bool:
        """True once the stored records are rated on the current scale."""
        return True if self._rerating is None else self._rerating.wait(timeout)

    def ratings_pending(self) -> int:
        """Stored records still to be rated again (after the scale changed)."""
        return self._rerating.pending() if self._rerating is not None else 0

    # Retrieval

    # Records in creation order, and every record's episode neighbours, rebuilt lazily when
    # the mirror's layout changes (see _creation_order and _episode_neighbours).
    _order_cache: _CreationOrder | None = None
    _neighbour_cache: tuple[tuple[int, int, float], NDArray[np.int32]] | None = None

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
        allowed = self._allowed(filters)
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
            self._touch([mirror.ids[i] for i in chosen], now)
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
                order, similarity, self._records_at(chosen.tolist()), strict=True
            )
        ]

    def _allowed(self, filters: Filters) -> NDArray[np.bool_]:
        """Which mirror records pass the filters (sources are read from the table)."""
        mirror = self._mirror
        allowed = mirror.mask(
            filters.kinds, filters.pinned, filters.since, filters.until, filters.deleted
        )
        if filters.sources:
            rows = self.records.query(where=filters.where(), columns=["id"])
            places = mirror.positions(rows.column("id").to_pylist())
            matching = np.zeros(len(mirror), dtype=bool)
            matching[places[places >= 0]] = True
            allowed &= matching
        return allowed

    def _asked(self, query: str) -> _Query:
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
        return _Query(query, vectors[0], names, vectors[1] if rest else None, graph_hits)

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
        asked: _Query,
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

        lexical = self._spread(text_hits.result() if text_hits is not None else {}, positions)
        relevance = self._relevance(asked, positions, lexical, subjects_of, similarity_to)
        return positions, relevance

    def _relevance_of_candidates(
        self,
        asked: _Query,
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
        rows = self.records.query(
            where=_and(in_list("id", candidate_ids), filters.where()),
            columns=["id", "text", "vector"],
            limit=len(candidate_ids),
        )
        ids = rows.column("id").to_pylist()
        positions = self._positions(ids)
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
        relevance = self._relevance(asked, positions, lexical_values, subjects_of, similarity_to)
        return positions, relevance, similarity_to(asked.vector)

    def _text_hits(self, query: str, where: str | None) -> dict[str, float]:
        """The best records by BM25 (``text_candidates`` of them), with their scores."""
        terms = lexical_query(query)
        if not terms:
            return {}
        try:
            by_text = self.records.text_search(terms, self.config.text_candidates, where, ["id"])
        except Exception as error:  # a query the FTS index rejects still gets vector hits
            log.warning("text search failed for %r: %s", terms[:80], error)
            return {}
        scores = by_text.column("_score").to_numpy().astype(np.float64).tolist()
        return dict(zip(by_text.column("id").to_pylist(), scores, strict=True))

    def _candidates(
        self,
        asked: _Query,
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
            by_vector = self.records.vector_search(
                asked.vector.tolist(), self.config.vector_candidates, where, ["id"]
            )
            found.update(dict.fromkeys(by_vector.column("id").to_pylist()))
            if text_hits is not None:
                lexical = text_hits.result()
                found.update(dict.fromkeys(lexical))
            found.update(dict.fromkeys(asked.graph_hits))
            if mode == "contextual" and self.config.context_weight > 0:
                positions = self._positions(list(found))
                near = self._neighbours(positions[positions >= 0], allowed)
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

    def _relevance(
        self,
        asked: _Query,
        positions: NDArray[np.int64],
        lexical: FloatArray,
        subjects_of: Callable[[Sequence[str]], tuple[NDArray[np.bool_], tuple[str, ...]]],
        similarity_to: Callable[[NDArray[np.float32]], FloatArray],
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
        mode = self.config.relevance
        if mode == "text":
            return lexical
        if mode == "cosine":
            return similarity_to(asked.vector)
        share = self.config.text_weight
        if mode == "rrf":
            fused: FloatArray = (1 - share) * reciprocal_rank(
                similarity_to(asked.vector), self.config.rrf_k
            ) + share * np.where(lexical > 0, reciprocal_rank(lexical, self.config.rrf_k), 0.0)
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
            blended = blended + self.config.graph_weight * self._spread(asked.graph_hits, positions)
        if mode != "contextual":
            return blended
        blended = blended + self.config.subject_boost * subjects
        return self._with_context(blended, positions)

    def _spread(self, values: dict[str, float], positions: NDArray[np.int64]) -> FloatArray:
        """``values`` (by record id) laid out over the records at mirror ``positions``; 0 for
        the records it does not name."""
        spread = np.zeros(positions.size, dtype=np.float64)
        if not values or positions.size == 0:
            return spread
        places = self._positions(list(values))
        order = np.argsort(positions, kind="stable")
        ordered = positions[order]
        index = np.clip(np.searchsorted(ordered, places), 0, positions.size - 1)
        found = (places >= 0) & (ordered[index] == places)
        spread[order[index[found]]] = np.fromiter(values.values(), dtype=np.float64)[found]
        return spread

    def _positions(self, ids: Sequence[str]) -> NDArray[np.int64]:
        return self._mirror.positions(ids)

    def _creation_order(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """(order, rank): mirror places sorted by creation, and each place's index in that."""
        if self._order_cache is None:
            self._order_cache = _CreationOrder()
        return self._order_cache.current(self._mirror.created_us)

    def _episode_neighbours(self) -> NDArray[np.int32]:
        """For every mirror record, the places of the records 1..context_radius steps before
        (side 0) and after (side 1) it in creation order, shape (radius, 2, records); the
        number of records (one past the last place) where there is none in its episode (same
        kind, created within context_gap_seconds)."""
        radius = max(self.config.context_radius, 0)
        key = (self._mirror.layout_version, radius, self.config.context_gap_seconds)
        if self._neighbour_cache is not None and self._neighbour_cache[0] == key:
            return self._neighbour_cache[1]
        count = len(self._mirror)
        near = np.full((radius, 2, count), count, dtype=np.int32)
        if count:
            order, rank = self._creation_order()
            created, kind = self._mirror.created_us, self._mirror.kind
            gap = int(self.config.context_gap_seconds * 1_000_000)
            last = count - 1
            for distance in range(1, radius + 1):
                for side, step in enumerate((-distance, distance)):
                    target = rank + step
                    other = order[np.clip(target, 0, last)]
                    keep = (
                        (target >= 0)
                        & (target <= last)
                        & (np.abs(created[other] - created) <= gap)
                        & (kind[other] == kind)
                    )
                    near[distance - 1, side] = np.where(keep, other, count)
        self._neighbour_cache = (key, near)
        return near

    def _neighbours(
        self, positions: NDArray[np.int64], allowed: NDArray[np.bool_] | None = None
    ) -> NDArray[np.int64]:
        """The episode neighbours (see _episode_neighbours) of the records at ``positions``,
        shape (radius, 2, len(positions)); -1 where there is none, or where the filters
        (``allowed``) leave it out."""
        count = len(self._mirror)
        near = self._episode_neighbours()[:, :, positions].astype(np.int64)
        keep = near < count
        if allowed is not None:
            keep &= np.append(allowed, False)[near]
        return np.where(keep, near, -1)

    def _with_context(self, values: FloatArray, positions: NDArray[np.int64]) -> FloatArray:
        """values[i] + sum over d of context_weight ** d * the larger of the values of the
        records d places before and after record i in its episode (a neighbour that is not
        among ``positions`` adds nothing; values are never negative)."""
        weight, radius = self.config.context_weight, self.config.context_radius
        if weight <= 0 or radius <= 0 or positions.size == 0:
            return values
        count = len(self._mirror)
        table = self._episode_neighbours()
        # Over every record at once when most are wanted; else only the wanted ones' columns.
        whole = 2 * positions.size > count
        # float32 halves the memory the gathers below touch; the extra slot: "no neighbour".
        dense = np.zeros(count + 1, dtype=np.float32)
        dense[positions] = values
        extra = np.zeros(count if whole else positions.size, dtype=np.float32)
        for distance in range(radius):
            before, after = table[distance] if whole else table[distance][:, positions]
            extra += weight ** (distance + 1) * np.maximum(dense[before], dense[after])
        smoothed: FloatArray = values + (extra[positions] if whole else extra)
        return smoothed

    def _touch(self, ids: Sequence[str], now: datetime) -> None:
        if ids:
            self.records.update(in_list("id", ids), {"last_accessed_at": now})
            self._mirror.touch(ids, now)

    def mark_accessed(self, record_ids: Sequence[str]) -> None:
        """The records were used (as ``retrieve`` marks what it returns): last_accessed_at =
        now. For a caller that retrieved with ``touch=False`` and used only some."""
        self._touch(list(dict.fromkeys(record_ids)), self._clock())

    def bump_utility(self, record_id: str, amount: float = 1.0) -> None:
        """A retrieved memory helped: it counts for more next time it is considered."""
        record = self._require(record_id)
        self._write(record_id, {"utility": record.utility + amount})

    # Reading, for the agent and the UI

    def get(self, record_id: str, include_deleted: bool = True) -> MemoryRecord | None:
        where = f"id = {quote(record_id)}" + ("" if include_deleted else " AND deleted = false")
        rows = self.records.query(where=where, limit=1).to_pylist()
        return MemoryRecord.from_row(rows[0]) if rows else None

    def get_many(self, record_ids: Sequence[str], embeddings: bool = True) -> list[MemoryRecord]:
        """The records in the order asked (unknown ids left out); without ``embeddings``
        their vectors are not read (a list for people)."""
        if not record_ids:
            return []
        columns = None if embeddings else [n for n in self.records.schema.names if n != "vector"]
        rows = self.records.query(
            where=in_list("id", record_ids), columns=columns, limit=len(record_ids)
        )
        by_id = {row["id"]: MemoryRecord.from_row(row) for row in rows.to_pylist()}
        return [by_id[i] for i in record_ids if i in by_id]

    def evidence_tree(self, record_id: str, depth: int = 6) -> EvidenceNode:
        """The record with what it cites, recursively (reflections citing reflections)."""
        return self._evidence(self._require(record_id), depth, set())

    def _evidence(self, record: MemoryRecord, depth: int, seen: set[str]) -> EvidenceNode:
        seen = seen | {record.id}
        if depth <= 0:
            return EvidenceNode(record, ())
        cited = [r for r in self.get_many(list(record.evidence)) if r.id not in seen]
        return EvidenceNode(record, tuple(self._evidence(r, depth - 1, seen) for r in cited))

    def list_memories(
        self,
        filters: Filters | None = None,
        sort: SortKey = "created_at",
        descending: bool = True,
        page: int = 1,
        page_size: int = 20,
    ) -> Page[MemoryRecord]:
        filters = filters or Filters()
        offset, limit = page_bounds(page, page_size)
        mirrored = self._mirrored_column(sort)
        if mirrored is not None:
            # From the in-memory copy: no scan of the table (100k records: 5 ms, not 100).
            positions = np.flatnonzero(self._allowed(filters))
            values = mirrored[positions]
            ids = self._mirror.ids
        else:
            keys = self.records.query(where=filters.where(), columns=["id", sort])
            column = keys.column(sort)
            if pa.types.is_timestamp(column.type):
                # A record with no event time sorts after those with one.
                column = column.cast(pa.int64()).fill_null(np.iinfo(np.int64).max)
            values = column.to_numpy(zero_copy_only=False)
            positions = np.arange(keys.num_rows)
            ids = keys.column("id").to_pylist()
        order = np.argsort(values, kind="stable")
        if descending:
            order = order[::-1]
        chosen = positions[order[offset : offset + limit]]
        records = (
            self._records_at(chosen.tolist())
            if mirrored is not None
            else self.get_many([ids[i] for i in chosen], embeddings=False)
        )
        return Page(tuple(records), len(positions), page, page_size)

    def _mirrored_column(self, sort: SortKey) -> NDArray[np.generic] | None:
        mirror = self._mirror
        columns: dict[str, NDArray[np.generic]] = {
            "created_at": mirror.created_us,
            "last_accessed_at": mirror.last_accessed_us,
            "importance": mirror.importance,
        }
        return columns.get(sort)

    def search(
        self, query: str, filters: Filters | None = None, page: int = 1, page_size: int = 20
    ) -> Page[ScoredMemory]:
        """Relevance-ranked search for people (does not count as an access): every record the
        filters allow is ranked, so ``total`` counts them all."""
        filters = filters or Filters()
        offset, limit = page_bounds(page, page_size)
        wanted = offset + limit
        found = self.retrieve(
            query,
            k=wanted,
            filters=filters,
            weights=RetrievalWeights(recency=0.0, importance=0.0, relevance=1.0),
            touch=False,
        )
        total = int(self._allowed(filters).sum())
        return Page(tuple(found[offset:wanted]), total, page, page_size)

    # Editing

    def edit(self, record_id: str, **changes: Any) -> MemoryRecord:
        """Change text (re-embedded, event time re-resolved), importance, pinned, kind or
        event_time; the change is kept in the history."""
        unknown = set(changes) - set(EDITABLE)
        if unknown:
            raise MemoryRequestError(
                f"cannot edit {', '.join(sorted(unknown))}; editable: {EDITABLE}"
            )
        record = self._require(record_id)
        now = self._clock()
        values = self._validated(changes, record, now)
        before = {name: _plain(getattr(record, name)) for name in values if name in EDITABLE}
        after = {name: _plain(values[name]) for name in before}
        self._write(record_id, {**values, "updated_at": now})
        self.history.record([new_change(record_id, "edit", before, after, now)])
        return self._require(record_id)

    def _validated(
        self, changes: dict[str, Any], record: MemoryRecord, now: datetime
    ) -> dict[str, Any]:
        values: dict[str, Any] = {}
        if "text" in changes:
            text = storable_text(str(changes["text"]))
            if not text:
                raise MemoryRequestError("a memory needs some text")
            values["text"] = text
            values["vector"] = self._embedder.embed([text[:MAX_EMBED_CHARS]])[0].tolist()
            if "event_time" not in changes:
                resolved = resolve_event_time(text, record.created_at)
                values["event_time"] = resolved.when if resolved else None
        if "importance" in changes:
            importance = int(changes["importance"])
            if not 1 <= importance <= 10:
                raise MemoryRequestError(f"importance must be 1-10, not {importance}")
            values["importance"] = importance
            values["importance_state"] = "given"
        if "pinned" in changes:
            values["pinned"] = bool(changes["pinned"])
        if "kind" in changes:
            if changes["kind"] not in KINDS:
                raise MemoryRequestError(f"unknown kind {changes['kind']!r}")
            values["kind"] = changes["kind"]
        if "event_time" in changes:
            values["event_time"] = changes["event_time"]
        return values

    def delete(self, record_id: str) -> None:
        """Soft delete: hidden from retrieval and lists, restorable."""
        self._set_deleted(record_id, True, "delete")

    def restore(self, record_id: str) -> None:
        self._set_deleted(record_id, False, "restore")

    def _set_deleted(
        self, record_id: str, deleted: bool, action: Literal["delete", "restore"]
    ) -> None:
        record = self._require(record_id)
        now = self._clock()
        self._write(record_id, {"deleted": deleted, "updated_at": now})
        self.history.record(
            [new_change(record_id, action, {"deleted": record.deleted}, {"deleted": deleted}, now)]
        )

    def changes(self, record_id: str | None = None, limit: int = 100) -> list[Change]:
        return self.history.list(record_id, limit)

    def undo(self, change_id: str | None = None) -> Change:
        """Undo one change (default: the newest one not yet undone); the undo is itself a change."""
        change = self.history.get(change_id) if change_id else self._last_undoable()
        if change is None:
            raise MemoryRequestError(
                "nothing to undo" if change_id is None else f"no change {change_id}"
            )
        if change.undone:
            raise MemoryRequestError(f"change {change.id} was already undone")
        if change.action == "add":
            self.delete(change.record_id)
        elif change.action == "delete":
            self.restore(change.record_id)
        elif change.action == "restore":
            self.delete(change.record_id)
        elif change.action == "edit":
            restored = {k: _revive(k, v) for k, v in change.before.items()}
            self.edit(change.record_id, **restored)
        else:
            raise MemoryRequestError(f"a {change.action} cannot be undone")
        self.history.mark_undone(change.id)
        return change

    def _last_undoable(self) -> Change | None:
        for change in self.history.list(limit=1_000):
            if not change.undone and change.action in ("add", "edit", "delete", "restore"):
                return change
        return None

    def _require(self, record_id: str) -> MemoryRecord:
        record = self.get(record_id)
        if record is None:
            raise MemoryRequestError(f"no memory with id {record_id}")
        return record


def _and(*clauses: str | None) -> str:
    return " AND ".join(c for c in clauses if c)


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _revive(name: str, value: Any) -> Any:
    if name == "event_time" and isinstance(value, str):
        return datetime.fromisoformat(value)
    return value


# Retrieval helpers


@dataclass(frozen=True)
class _Query:
    text: str
    vector: NDArray[np.float32]
    # Capitalised words that may name people (contextual relevance), and the vector of the
    # query without them (None: no names, or nothing but question words left).
    names: tuple[str, ...] = ()
    without_names: NDArray[np.float32] | None = None
    # Memories the knowledge graph found for the query, with their graph score (0-1).
    graph_hits: dict[str, float] = field(default_factory=dict)


_WORD = re.compile(r"[^\W\d_][\w-]*")
# Capitalised only because they open the question: never taken for names there.
_OPENERS = frozenset(
    re.findall(
        r"\w+",
        "what when where who whom whose why how which did do does is are was were has have had "
        "can could would should will shall may might must tell list name describe give show find "
        "please the a an in on at for from with during after before since this that these those "
        "there it its my our your their his her i we you they",
    )
)


def lexical_query(query: str) -> str:
    """The query as plain lower-case words for BM25: the full-text parser reads quotes as a
    phrase (which an index without positions cannot answer) and AND / OR as operators."""
    return " ".join(re.findall(r"\w+", query.lower()))


def query_names(query: str) -> tuple[str, ...]:
    """Words of the query that may be names: those that start with a capital letter, but not
    a question or function word that is capitalised because it opens a sentence ("What")."""
    names: dict[str, None] = {}
    for match in _WORD.finditer(query):
        word = match.group()
        if len(word) < 2 or not word[0].isupper():
            continue
        before = query[: match.start()].rstrip(" \t\n\"'(")
        opens_sentence = not before or before[-1] in ".?!"
        if not (opens_sentence and word.lower() in _OPENERS):
            names[word] = None
    return tuple(names)


def without_names(query: str, names: Sequence[str]) -> str:
    """The query with the names (and their possessive 's) taken out; empty when nothing but
    question or function words would be left."""
    if not names:
        return ""
    pattern = r"(?<!\w)(?:" + "|".join(re.escape(n) for n in names) + r")(?:['\u2019]s)?(?!\w)"
    rest = " ".join(re.sub(pattern, " ", query).split())
    words = [w.lower() for w in _WORD.findall(rest)]
    return rest if any(w not in _OPENERS for w in words) else ""


def opening_names(
    texts: pa.Array | pa.ChunkedArray, names: Sequence[str]
) -> tuple[NDArray[np.bool_], tuple[str, ...]]:
    """Which texts open with one of the names ("Anna: ...", "Anna moved ..."), and which of
    the names open at least one text."""
    words = np.asarray(openers(texts).to_pylist(), dtype=object)
    hits = np.isin(words, list(names))
    present = set(words[hits].tolist())
    return hits, tuple(name for name in names if name in present)


def _unit(vector: NDArray[np.float32]) -> NDArray[np.float32]:
    length = float(np.linalg.norm(vector))
    unit: NDArray[np.float32] = (vector / length if length > 0 else vector).astype(np.float32)
    return unit


def _best(scores: FloatArray, k: int) -> NDArray[np.int64]:
    """Indices of the ``k`` highest scores, highest first (ties: the lower index first)."""
    if scores.size > k:
        top = np.argpartition(-scores, k - 1)[:k]
        top.sort()
    else:
        top = np.arange(scores.size)
    ordered: NDArray[np.int64] = top[np.argsort(-scores[top], kind="stable")].astype(np.int64)
    return ordered


class _CreationOrder:
    """The mirror's records sorted by created_at (records created at the same moment in the
    order they were added: a batch keeps its order), and each record's place in that order.
    Kept in step with the mirror's created_us array (a new array object whenever records are
    added or loaded); appending newer records extends it without a new sort. ``order`` and
    ``rank`` are replaced together, so a reader never sees one without the other."""

    def __init__(self) -> None:
        empty = np.zeros(0, dtype=np.int64)
        self._state: tuple[NDArray[np.int64] | None, NDArray[np.int64], NDArray[np.int64]] = (
            None,
            empty,
            empty,
        )

    @property
    def order(self) -> NDArray[np.int64]:
        return self._state[1]

    @property
    def rank(self) -> NDArray[np.int64]:
        return self._state[2]

    def current(self, created: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """(order, rank) for ``created``."""
        self.update(created)
        _, order, rank = self._state
        return order, rank

    def update(self, created: NDArray[np.int64]) -> None:
        old, order, rank = self._state
        if created is old:
            return
        size = 0 if old is None else old.size
        tail = created[size:]
        if (
            old is not None
            and size
            and created.size > size
            and int(tail.min()) >= int(old.max())
            and np.array_equal(created[:size], old)
        ):
            added = np.argsort(tail, kind="stable").astype(np.int64)
            tail_rank = np.empty(tail.size, dtype=np.int64)
            tail_rank[added] = np.arange(size, created.size, dtype=np.int64)
            order = np.concatenate([order, added + size])
            rank = np.concatenate([rank, tail_rank])
        else:
            order = np.argsort(created, kind="stable").astype(np.int64)
            rank = np.empty(created.size, dtype=np.int64)
            rank[order] = np.arange(created.size, dtype=np.int64)
        self._state = (created, order, rank)
