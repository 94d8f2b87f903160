"""Adding records to the stream: validated, embedded, rated, merged into a recent near-copy,
and each addition kept in the history; and the ratings made again when the scale changes."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from numpy.typing import NDArray

from memory.embedder import Embedder
from memory.history import History, new_change
from memory.importance import Rating
from memory.records import (
    DEFAULT_IMPORTANCE,
    KINDS,
    Clock,
    ImportanceState,
    Kind,
    MemoryRecord,
    is_valid_source,
)
from memory.rerating import ImportanceRating, Rerating
from memory.stream.config import MemoryConfig
from memory.stream.stored import MemoryRequestError, StoredRecords
from memory.table import in_list, quote, timestamp_literal
from memory.text import MAX_EMBED_CHARS, storable_text
from memory.timeparse import resolve_event_time


@dataclass(frozen=True)
class NewMemory:
    """What a caller asks to remember; see :meth:`MemoryWriter.add`."""

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


class MemoryWriter:
    def __init__(
        self,
        stored: StoredRecords,
        history: History,
        embedder: Embedder,
        clock: Clock,
        config: MemoryConfig,
        rating: ImportanceRating | None,
    ) -> None:
        self.config = config
        self._stored = stored
        self._history = history
        self._embedder = embedder
        self._clock = clock
        # Rates each new record as it is stored (None: records wait, unrated, for a scale).
        self._scale = rating.scale if rating is not None else None
        self._rerating = (
            Rerating(stored.table, rating.scale, self._apply_ratings, rating.version_file)
            if rating is not None
            else None
        )

    def close(self) -> None:
        if self._rerating is not None:
            self._rerating.close()

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
            self._stored.add([record.to_row() for record in fresh])
            self._history.record(
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
        table = self._stored.table
        for start in range(0, len(rows), 10_000):
            table.upsert(rows[start : start + 10_000])
        table.ensure_indices()
        self._stored.load(self.config.exact_scoring)
        self._stored.feed.tell(r.id for r in records)

    def _recent_duplicate(
        self, vector: NDArray[np.float32], kind: Kind, now: datetime
    ) -> MemoryRecord | None:
        if not len(self._stored.mirror):
            return None
        since = now.timestamp() - self.config.duplicate_window_hours * 3600
        where = (
            f"deleted = false AND kind = {quote(kind)} AND "
            f"created_at >= {timestamp_literal(datetime.fromtimestamp(since, now.tzinfo))}"
        )
        found = self._stored.table.vector_search(vector.tolist(), 1, where, ["id"])
        if (
            found.num_rows
            and 1.0 - found.column("_distance")[0].as_py() >= self.config.duplicate_cosine
        ):
            return self._stored.get(found.column("id")[0].as_py())
        return None

    def _merge(self, existing: MemoryRecord, source: str, now: datetime) -> MemoryRecord:
        sources = existing.sources if source in existing.sources else (*existing.sources, source)
        self._stored.write(
            existing.id, {"sources": list(sources), "last_accessed_at": now, "updated_at": now}
        )
        self._history.record(
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
        table = self._stored.table
        for importance, ids in by_value.items():
            table.update(
                f"{in_list('id', ids)} AND importance_state != 'given'",
                {"importance": importance, "importance_state": "rated"},
            )
        # A rating does not replace an importance the user gave meanwhile: mirror what the
        # table kept.
        kept = table.query(
            where=in_list("id", [r.record_id for r in ratings]),
            columns=["id", "importance", "importance_state"],
        )
        for row in kept.to_pylist():
            self._stored.mirror.set(row.pop("id"), **row)
        self._stored.feed.tell(r.record_id for r in ratings)
        self._history.record(
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
