"""A copy of the stored fields the ranking mirror has no array for (text, sources, evidence,
event time, ...), so the mirror can hand back whole records.

Retrieval chooses records by their place in the mirror; reading those few rows back from
LanceDB by id cost 8-10 ms at 100,000 records on 2 cores (a fifth of a retrieval), whatever
the query, index or API (filter on the id's B-tree index, ``take_row_ids``, ``take_offsets``).
Taken from this copy they cost microseconds. The copy is an Arrow table as loaded, the rows
added since (kept as dictionaries, folded into the table every ``FOLD_ROWS``), and the
changes made since, by place: about 17 MB at 100,000 records of the scale benchmark's
texts (the mirror's vectors take 150 MB). Only the process that owns the store writes it
(the service), so the copy is kept current by that process's own writes, as the mirror is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

# Rows added one by one are folded into the Arrow table in batches of this many: a dictionary
# a row costs more memory than the same row in Arrow, and a fold copies the table.
FOLD_ROWS = 4_096


class StoredRows:
    def __init__(self, table: pa.Table) -> None:
        """``table``: the records' columns as stored, one row per mirror place."""
        # One chunk a column: a take over the thousand batches a scan returns took 3 ms.
        self._table = table.combine_chunks()
        self._added: list[dict[str, Any]] = []
        self._changes: dict[int, dict[str, Any]] = {}

    def __len__(self) -> int:
        return int(self._table.num_rows) + len(self._added)

    def extend(self, rows: Sequence[dict[str, Any]]) -> None:
        """New records at the next places (rows as stored; columns the table lacks are not
        kept)."""
        names = self._table.column_names
        self._added.extend({name: row.get(name) for name in names} for row in rows)
        if len(self._added) >= FOLD_ROWS:
            added = pa.Table.from_pylist(self._added, schema=self._table.schema)
            self._table = pa.concat_tables([self._table, added])
            self._added = []

    def change(self, place: int, values: dict[str, Any]) -> None:
        """New values (as stored) for the record at ``place``; columns the table lacks are
        not kept."""
        kept = {name: value for name, value in values.items() if name in self._table.schema.names}
        if not kept:
            return
        folded = self._table.num_rows
        if place >= folded:
            self._added[place - folded].update(kept)
        else:
            self._changes.setdefault(place, {}).update(kept)

    def at(self, places: Sequence[int]) -> list[dict[str, Any]]:
        """The rows at ``places``, in that order, as dictionaries of Python values."""
        folded = self._table.num_rows
        inside = pa.array([p for p in places if p < folded], type=pa.int64())
        taken = iter(self._table.take(inside).to_pylist())
        rows: list[dict[str, Any]] = []
        for place in places:
            if place < folded:
                row = next(taken)
                row.update(self._changes.get(place, {}))
            else:
                row = dict(self._added[place - folded])
            rows.append(row)
        return rows
