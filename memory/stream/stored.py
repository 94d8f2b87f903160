"""The records table and its in-memory mirror, kept in step: every part of the stream reads and
writes records through here."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memory.feed import ChangeFeed
from memory.locking import WriteLock
from memory.mirror import RecordMirror
from memory.records import MemoryRecord, records_schema
from memory.stream.filters import Filters
from memory.table import Table, in_list, quote


class MemoryRequestError(Exception):
    """A request the memory cannot carry out (unknown id, bad value); the message says which."""


class StoredRecords:
    """The ``records`` table, and the mirror of it (memory/mirror.py) that retrieval and the
    listing read; with its vectors too when ``with_vectors`` (exact scoring). Every write is
    told to ``feed`` once it is in (a touch, which only marks records as read, is not)."""

    def __init__(self, database: Any, lock: WriteLock, dimensions: int, with_vectors: bool) -> None:
        self.table = Table(database, "records", records_schema(dimensions), lock)
        self.mirror = RecordMirror()
        self.feed = ChangeFeed()
        self.load(with_vectors)
        self.table.ensure_indices()

    def __len__(self) -> int:
        """The live (not deleted) records."""
        return int((~self.mirror.deleted).sum())

    def load(self, with_vectors: bool) -> None:
        """Every column but the vectors (and those too when every record is scored)."""
        all_but_vector = [name for name in self.table.schema.names if name != "vector"]
        columns = None if with_vectors else all_but_vector
        self.mirror.load(self.table.query(columns=columns))

    def add(self, rows: Sequence[dict[str, Any]]) -> None:
        """New records, in the table and in the mirror."""
        self.table.add(rows)
        self.mirror.extend(rows)
        self.feed.tell(row["id"] for row in rows)

    def write(self, record_id: str, values: dict[str, Any]) -> None:
        """Change one record's stored values, in the table and in the mirror."""
        self.table.update(f"id = {quote(record_id)}", values)
        self.mirror.set(record_id, **values)
        self.feed.tell([record_id])

    def write_many(self, record_ids: Sequence[str], values: dict[str, Any]) -> None:
        """Give several records the same new values, in one table write and in the mirror."""
        if record_ids:
            self.table.update(in_list("id", record_ids), values)
            for record_id in record_ids:
                self.mirror.set(record_id, **values)
            self.feed.tell(record_ids)

    def touch(self, ids: Sequence[str], now: datetime) -> None:
        if ids:
            self.table.update(in_list("id", ids), {"last_accessed_at": now})
            self.mirror.touch(ids, now)

    def get(self, record_id: str, include_deleted: bool = True) -> MemoryRecord | None:
        where = f"id = {quote(record_id)}" + ("" if include_deleted else " AND deleted = false")
        rows = self.table.query(where=where, limit=1).to_pylist()
        return MemoryRecord.from_row(rows[0]) if rows else None

    def get_many(self, record_ids: Sequence[str], embeddings: bool = True) -> list[MemoryRecord]:
        """The records in the order asked (unknown ids left out); without ``embeddings``
        their vectors are not read (a list for people)."""
        if not record_ids:
            return []
        columns = None if embeddings else [n for n in self.table.schema.names if n != "vector"]
        rows = self.table.query(
            where=in_list("id", record_ids), columns=columns, limit=len(record_ids)
        )
        by_id = {row["id"]: MemoryRecord.from_row(row) for row in rows.to_pylist()}
        return [by_id[i] for i in record_ids if i in by_id]

    def require(self, record_id: str) -> MemoryRecord:
        record = self.get(record_id)
        if record is None:
            raise MemoryRequestError(f"no memory with id {record_id}")
        return record

    def at(self, positions: Sequence[int]) -> list[MemoryRecord]:
        """The records at these mirror places (without their vectors)."""
        return [MemoryRecord.from_row(row) for row in self.mirror.rows_at(positions)]

    def allowed(self, filters: Filters) -> NDArray[np.bool_]:
        """Which mirror records pass the filters (sources are read from the table)."""
        mirror = self.mirror
        allowed = mirror.mask(
            filters.kinds, filters.pinned, filters.since, filters.until, filters.deleted
        )
        if filters.sources:
            rows = self.table.query(where=filters.where(), columns=["id"])
            places = mirror.positions(rows.column("id").to_pylist())
            matching = np.zeros(len(mirror), dtype=bool)
            matching[places[places >= 0]] = True
            allowed &= matching
        return allowed
