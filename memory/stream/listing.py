"""What the memory screen lists and pages: records by a column or by relevance to a search,
and the evidence a reflection cites. Reading only: a listing never changes a record."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from memory.paging import Page, page_bounds
from memory.records import MemoryRecord, SortKey
from memory.scoring import RetrievalWeights
from memory.stream.filters import Filters
from memory.stream.retrieval import Retrieval, ScoredMemory
from memory.stream.stored import StoredRecords


@dataclass(frozen=True)
class EvidenceNode:
    record: MemoryRecord
    children: tuple[EvidenceNode, ...]


class MemoryListing:
    def __init__(self, stored: StoredRecords, retrieval: Retrieval) -> None:
        self._stored = stored
        self._mirror = stored.mirror
        self._retrieval = retrieval

    def evidence_tree(self, record_id: str, depth: int = 6) -> EvidenceNode:
        """The record with what it cites, recursively (reflections citing reflections)."""
        return self._evidence(self._stored.require(record_id), depth, set())

    def _evidence(self, record: MemoryRecord, depth: int, seen: set[str]) -> EvidenceNode:
        seen = seen | {record.id}
        if depth <= 0:
            return EvidenceNode(record, ())
        cited = [r for r in self._stored.get_many(list(record.evidence)) if r.id not in seen]
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
            positions = np.flatnonzero(self._stored.allowed(filters))
            values = mirrored[positions]
            ids = self._mirror.ids
        else:
            keys = self._stored.table.query(where=filters.where(), columns=["id", sort])
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
            self._stored.at(chosen.tolist())
            if mirrored is not None
            else self._stored.get_many([ids[i] for i in chosen], embeddings=False)
        )
        return Page(tuple(records), len(positions), page, page_size)

    def _mirrored_column(self, sort: SortKey) -> NDArray[np.generic] | None:
        mirror = self._mirror
        columns: dict[str, NDArray[np.generic]] = {
            "created_at": mirror.created_us,
            "last_accessed_at": mirror.last_accessed_us,
            "importance": mirror.importance,
            "utility": mirror.utility,
        }
        return columns.get(sort)

    def search(
        self, query: str, filters: Filters | None = None, page: int = 1, page_size: int = 20
    ) -> Page[ScoredMemory]:
        """Relevance-ranked search for people (does not count as an access; what the words
        match, not what the assistant found useful): every record the filters allow is
        ranked, so ``total`` counts them all."""
        filters = filters or Filters()
        offset, limit = page_bounds(page, page_size)
        wanted = offset + limit
        found = self._retrieval.retrieve(
            query,
            k=wanted,
            filters=filters,
            weights=RetrievalWeights(recency=0.0, importance=0.0, relevance=1.0, utility=0.0),
            touch=False,
        )
        total = int(self._stored.allowed(filters).sum())
        return Page(tuple(found[offset:wanted]), total, page, page_size)
