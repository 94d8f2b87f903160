"""The memory stream: the one API over the assistant's long-term memory.

Add a record (committed before ``add`` returns; importance rated later in the background),
retrieve by the Generative Agents score, and list / search / edit / delete / restore / undo, with
every change kept in a history; and raise or lower a memory's utility as it helps or
misleads. Imports nothing from ``assistant`` or ``ui``: the database and its write lock, the
embedder, the importance scale and the clock are handed in.

This class only composes the parts, each in its own module beside it: ``stored`` (the records
table and its in-memory mirror), ``writing`` (adding, merging, rating), ``editing`` (edit,
delete, restore, history, undo), ``retrieval`` with ``candidates``, ``relevance``,
``episodes`` and ``query_text`` (scoring), ``listing`` (what the memory screen lists and pages)
and ``utility`` (what a memory has been worth in use).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from memory.embedder import Embedder
from memory.feed import ChangeFeed
from memory.history import HISTORY_SCHEMA, Change, History
from memory.locking import WriteLock
from memory.paging import Page
from memory.records import Clock, Kind, MemoryRecord, SortKey, utc_now
from memory.rerating import ImportanceRating
from memory.scoring import RetrievalWeights
from memory.stream.candidates import Candidates
from memory.stream.config import MemoryConfig
from memory.stream.editing import MemoryEditor
from memory.stream.episodes import Episodes
from memory.stream.filters import Filters
from memory.stream.listing import EvidenceNode, MemoryListing
from memory.stream.relevance import Relevance
from memory.stream.retrieval import GraphSource, Retrieval, ScoredMemory
from memory.stream.stored import StoredRecords
from memory.stream.utility import UtilityKeeper
from memory.stream.writing import MemoryWriter, NewMemory
from memory.table import Table


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
        config = config or MemoryConfig()
        self._clock = clock
        self._lock = lock
        self._stored = StoredRecords(database, lock, embedder.dimensions, config.exact_scoring)
        self.records = self._stored.table
        self.history = History(
            Table(database, "history", HISTORY_SCHEMA, lock, text_column=None, vector_column=None)
        )
        mirror = self._stored.mirror
        episodes = Episodes(mirror)
        relevance = Relevance(mirror, embedder, episodes)
        candidates = Candidates(self._stored, episodes, relevance)
        self._retrieval = Retrieval(
            self._stored, embedder, clock, config, graph, relevance, candidates
        )
        self._writer = MemoryWriter(self._stored, self.history, embedder, clock, config, rating)
        self._editor = MemoryEditor(self._stored, self.history, embedder, clock)
        self._listing = MemoryListing(self._stored, self._retrieval)
        self._utility = UtilityKeeper(self._stored)

    @property
    def config(self) -> MemoryConfig:
        return self._retrieval.config

    @config.setter
    def config(self, config: MemoryConfig) -> None:
        self._retrieval.config = config
        self._writer.config = config

    @property
    def graph(self) -> GraphSource | None:
        return self._retrieval.graph

    @graph.setter
    def graph(self, graph: GraphSource | None) -> None:
        self._retrieval.graph = graph

    def close(self) -> None:
        self._writer.close()
        self._retrieval.close()

    def __len__(self) -> int:
        return len(self._stored)

    @property
    def feed(self) -> ChangeFeed:
        """Told the ids of the records each committed write changed (adds, edits, deletes,
        restores, undos, merges, ratings, utility; not the touch of a retrieval)."""
        return self._stored.feed

    def holding(self) -> AbstractContextManager[None]:
        """The write lock, held: no other writer changes a record until it is let go (for a
        read, a decision and the writes it leads to, that must not interleave with others)."""
        return self._lock.hold()

    def now(self) -> datetime:
        """The time by the stream's clock (what created_at and last_accessed_at are set to)."""
        return self._clock()

    # Adding (writing.py)

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
        return self._writer.add(
            text,
            kind,
            source,
            importance=importance,
            evidence=evidence,
            event_time=event_time,
            created_at=created_at,
            pinned=pinned,
        )

    def add_many(
        self, items: Sequence[NewMemory], merge_duplicates: bool = True
    ) -> list[MemoryRecord]:
        return self._writer.add_many(items, merge_duplicates)

    def restore_records(self, records: Sequence[MemoryRecord]) -> None:
        self._writer.restore_records(records)

    def wait_for_ratings(self, timeout: float | None = None) -> bool:
        return self._writer.wait_for_ratings(timeout)

    def ratings_pending(self) -> int:
        return self._writer.ratings_pending()

    # Utility (utility.py)

    def adjust_utility(self, record_ids: Sequence[str], helped: bool) -> None:
        """The memories helped (raised by ``config.utility_gain``) or misled (lowered by
        ``utility_loss``), within +-``utility_bound``; unknown ids are skipped."""
        self._utility.adjust(record_ids, helped, self.config)

    # Retrieval (retrieval.py)

    def retrieve(
        self,
        query: str,
        k: int = 10,
        filters: Filters | None = None,
        weights: RetrievalWeights | None = None,
        touch: bool = True,
    ) -> list[ScoredMemory]:
        return self._retrieval.retrieve(query, k, filters, weights, touch)

    def mark_accessed(self, record_ids: Sequence[str]) -> None:
        self._retrieval.mark_accessed(record_ids)

    # Reading, for the agent and the UI (stored.py, listing.py)

    def get(self, record_id: str, include_deleted: bool = True) -> MemoryRecord | None:
        return self._stored.get(record_id, include_deleted)

    def get_many(self, record_ids: Sequence[str], embeddings: bool = True) -> list[MemoryRecord]:
        return self._stored.get_many(record_ids, embeddings)

    def evidence_tree(self, record_id: str, depth: int = 6) -> EvidenceNode:
        return self._listing.evidence_tree(record_id, depth)

    def list_memories(
        self,
        filters: Filters | None = None,
        sort: SortKey = "created_at",
        descending: bool = True,
        page: int = 1,
        page_size: int = 20,
    ) -> Page[MemoryRecord]:
        return self._listing.list_memories(filters, sort, descending, page, page_size)

    def search(
        self, query: str, filters: Filters | None = None, page: int = 1, page_size: int = 20
    ) -> Page[ScoredMemory]:
        return self._listing.search(query, filters, page, page_size)

    # Editing and history (editing.py)

    def edit(self, record_id: str, **changes: Any) -> MemoryRecord:
        return self._editor.edit(record_id, **changes)

    def delete(self, record_id: str) -> None:
        self._editor.delete(record_id)

    def restore(self, record_id: str) -> None:
        self._editor.restore(record_id)

    def changes(self, record_id: str | None = None, limit: int = 100) -> list[Change]:
        return self._editor.changes(record_id, limit)

    def undo(self, change_id: str | None = None) -> Change:
        return self._editor.undo(change_id)
