"""A LanceDB table with serialised writes, indices made as it grows, and errors that say what
is wrong. A table that exists but cannot be read is reported, never replaced by an empty one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, TypeVar

import pyarrow as pa
from lancedb.index import FTS, Bitmap, BTree, IvfSq

from memory.database import DatabaseError
from memory.locking import LockTimeout, WriteLock
from memory.mirror import to_us

log = logging.getLogger(__name__)
T = TypeVar("T")

# Brute-force vector search is exact and fast enough below this; above it an IVF index with
# scalar-quantised (int8) vectors. Measured at 100k real MiniLM rows on 2 cores, top-100 by
# cosine: IVF_SQ builds in 1.6 s and finds 0.99 of the exact top 100 in 16.5 ms; IVF_PQ (the
# earlier choice) took 83 s to build and found 0.66 in 10.9 ms (0.88 with refine_factor 2);
# IVF_FLAT 2.2 s, 0.999, 30.8 ms. The PQ build grows with the table: at 1M rows it would hold
# the write lock for many minutes.
VECTOR_INDEX_MIN_ROWS = 50_000
# Low-cardinality columns that nearly every query filters on ("deleted = false"): a bitmap
# index lets the prefilter skip the column scan (full-text search with it: 11.4 -> 6.3 ms at
# 100k rows).
BITMAP_COLUMNS = ("deleted",)
# New rows are searchable at once (flat search over unindexed rows); folding them into the
# indices every so often keeps queries fast. Folding costs time in proportion to the whole table
# (LanceDB's optimize rewrites the growing data file and merges the full-text index: about 7 s
# at 110k rows on 2 cores), so it waits for whichever is larger: REINDEX_EVERY_ROWS new rows, or
# REINDEX_SHARE of the rows already there. Growing to N rows then costs O(N) in all instead of
# O(N^2 / REINDEX_EVERY_ROWS), and at most about a twentieth of the rows are searched flat.
REINDEX_EVERY_ROWS = 5_000
REINDEX_SHARE = 0.05
# Vector searches asking for this many rows or fewer re-rank refine_factor times as many
# candidates by their exact distance (the quantised distance is approximate, and the duplicate
# check compares the top-1 distance with a threshold).
REFINE_LIMIT = 20
# Each write makes a new table version, and LanceDB keeps the files of old versions for 7 days
# unless told otherwise: at a million records the old versions took 3 GB for 150 MB of live
# data. Every fold (and every open) drops versions older than this; the history table, not
# old versions, is what undo reads.
KEEP_OLD_VERSIONS = timedelta(hours=1)
REFINE_FACTOR = 10


def quote(value: str) -> str:
    """A SQL string literal for LanceDB filters."""
    return "'" + value.replace("'", "''") + "'"


def in_list(column: str, values: Sequence[str]) -> str:
    return f"{column} IN ({', '.join(quote(v) for v in values)})"


def table_names(database: Any) -> set[str]:
    names: set[str] = set()
    token = None
    while True:
        response = database.list_tables(page_token=token)
        names.update(response.tables)
        token = response.page_token
        if not token:
            return names


class Table:
    def __init__(
        self,
        database: Any,
        name: str,
        schema: pa.Schema,
        lock: WriteLock,
        text_column: str | None = "text",
        vector_column: str | None = "vector",
        keep_old_versions: timedelta = KEEP_OLD_VERSIONS,
    ) -> None:
        self.name = name
        self._keep_old_versions = keep_old_versions
        self.schema = schema
        self._lock = lock
        self._text_column = text_column
        self._vector_column = vector_column
        self._rows_since_index = 0
        self._deferred = 0
        self._table = self._open_or_create(database)
        self._indexed_rows = self._table.count_rows()
        self._has_text_index = self._text_index_name() in self._index_names()

    def _open_or_create(self, database: Any) -> Any:
        location = f"{database.uri}/{self.name}.lance"
        try:
            existing = table_names(database)
        except Exception as error:  # LanceDB raises several types for an unreadable folder
            raise DatabaseError(f"cannot list the tables in {database.uri}: {error}") from None
        if self.name not in existing:
            with self._locked():
                if self.name not in table_names(database):
                    return database.create_table(self.name, schema=self.schema)
        try:
            table = database.open_table(self.name)
            table.count_rows()
        except Exception as error:
            raise DatabaseError(
                f"the memory table {location} exists but cannot be read ({_short(error)}); it was "
                "left untouched: restore it from a backup or move it aside to start afresh"
            ) from None
        return table

    def _locked(self) -> Any:
        return self._lock.hold()

    def write(self, action: Callable[[Any], T]) -> T:
        """Run ``action(table)`` holding the write lock, on the latest version of the table."""
        try:
            with self._lock.hold():
                self._table.checkout_latest()
                return action(self._table)
        except LockTimeout as error:
            raise DatabaseError(f"the memory database is locked: {error}") from None

    def add(self, rows: list[dict[str, Any]] | pa.Table) -> None:
        data = (
            rows if isinstance(rows, pa.Table) else pa.Table.from_pylist(rows, schema=self.schema)
        )
        self.write(lambda table: table.add(data))
        self._rows_since_index += data.num_rows
        # The text index also decides tokenising (stemming, stop words): make it with the first
        # rows, so search behaves the same on a new table as on an old one.
        needs_text_index = self._text_column is not None and not self._has_text_index
        due = max(REINDEX_EVERY_ROWS, int(REINDEX_SHARE * self._indexed_rows))
        if needs_text_index or (self._rows_since_index >= due and not self._deferred):
            self.ensure_indices()

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """Adding many rows (an import, a benchmark): fold them into the indices once, at the
        end, instead of as they arrive. Rows added meanwhile are searchable (flat)."""
        self._deferred += 1
        try:
            yield
        finally:
            self._deferred -= 1
        # After a failure the rows stay unfolded until the next fold (or the next open).
        if not self._deferred and self._rows_since_index:
            self.ensure_indices()

    def update(self, where: str, values: dict[str, Any]) -> None:
        self.write(lambda table: table.update(where=where, values=values))

    def upsert(self, rows: list[dict[str, Any]], on: str = "id") -> None:
        data = pa.Table.from_pylist(rows, schema=self.schema)
        self.write(
            lambda table: (
                table.merge_insert(on)
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(data)
            )
        )

    def refresh(self) -> None:
        self._table.checkout_latest()

    def count(self, where: str | None = None) -> int:
        self.refresh()
        return int(self._table.count_rows(where))

    def query(
        self,
        where: str | None = None,
        columns: Sequence[str] | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> pa.Table:
        self.refresh()
        builder = self._table.search()
        if where:
            builder = builder.where(where)
        if columns:
            builder = builder.select(list(columns))
        if offset:
            builder = builder.offset(offset)
        builder = builder.limit(limit if limit is not None else max(self._table.count_rows(), 1))
        result: pa.Table = builder.to_arrow()
        return result

    def vector_search(
        self, vector: Sequence[float], limit: int, where: str | None, columns: Sequence[str]
    ) -> pa.Table:
        builder = self._table.search(list(vector), vector_column_name=self._vector_column)
        builder = builder.distance_type("cosine")
        if limit <= REFINE_LIMIT:
            builder = builder.refine_factor(REFINE_FACTOR)
        if where:
            builder = builder.where(where, prefilter=True)
        result: pa.Table = builder.select([*columns, "_distance"]).limit(limit).to_arrow()
        return result

    def text_search(
        self, text: str, limit: int, where: str | None, columns: Sequence[str]
    ) -> pa.Table:
        builder = self._table.search(text, query_type="fts", fts_columns=self._text_column)
        if where:
            builder = builder.where(where, prefilter=True)
        result: pa.Table = builder.select([*columns, "_score"]).limit(limit).to_arrow()
        return result

    def _text_index_name(self) -> str:
        return f"{self._text_column}_idx"

    def _index_names(self) -> set[str]:
        return {index.name for index in self._table.list_indices()}

    def ensure_indices(self) -> None:
        """Create missing indices and fold new rows into existing ones."""

        def maintain(table: Any) -> None:
            names = {index.name for index in table.list_indices()}
            rows = table.count_rows()
            if "id_idx" not in names and "id" in self.schema.names and rows:
                table.create_index("id", config=BTree())
            if self._text_column and self._text_index_name() not in names and rows:
                table.create_index(self._text_column, config=FTS())
            vector_index = f"{self._vector_column}_idx"
            for column in BITMAP_COLUMNS:
                if f"{column}_idx" not in names and column in self.schema.names and rows:
                    table.create_index(column, config=Bitmap())
            if self._vector_column and vector_index not in names and rows >= VECTOR_INDEX_MIN_ROWS:
                table.create_index(self._vector_column, config=IvfSq(distance_type="cosine"))
            if names:  # fold new rows into the indices that were there (and compact the files)
                table.optimize(cleanup_older_than=self._keep_old_versions)

        self.write(maintain)
        self._rows_since_index = 0
        self._indexed_rows = self._table.count_rows()
        self._has_text_index = self._text_index_name() in self._index_names()


def _short(error: Exception) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= 160 else text[:159] + "…"


def timestamp_literal(moment: datetime) -> str:
    """``moment`` as a UTC timestamp in a LanceDB filter."""
    return f"arrow_cast({to_us(moment)}, 'Timestamp(Microsecond, Some(\"UTC\"))')"
