"""An in-memory copy of the few columns retrieval ranks by, one numpy array each.

It lets retrieval pick the records that score high on recency and importance (terms that do
not depend on the query) with one vectorised pass, without a table scan per query. At a million
records the scalar columns take about 30 MB. Only this process writes the table (the service
owns the store), so the copy is kept current by the store's own writes.

Loaded with ``VECTOR_COLUMNS`` (instead of ``COLUMNS``) it also keeps every record's embedding
scaled to length 1 (384 float32 = 1.5 KB a record: 15 MB at 10k, 150 MB at 100k, 1.5 GB at 1M)
and the word its text opens with (the speaker of "Anna: ...", the subject of "Anna moved ..."),
and :meth:`RecordMirror.similarity` gives the cosine of a query to *every* record in one
matrix-vector product (about 1 ms at 10k, 10 ms at 100k, 150 ms at 1M on 2 cores), so
retrieval can score all records exactly instead of a candidate list.

Loaded with every column it also keeps the rest of each record's stored fields
(``memory.stored_rows``), so retrieval and the memory list read the records they chose from
here (:meth:`RecordMirror.rows_at`), not from LanceDB.

The arrays are views of buffers that grow by doubling, so adding records in batches costs
amortised O(batch), not a copy of every array per batch. Each attribute is the same object until
records are added or loaded (``CreationOrder`` in memory/stream/episodes.py relies on that).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from memory.records import KINDS, Kind
from memory.stored_rows import StoredRows

COLUMNS = [
    "id",
    "kind",
    "importance",
    "utility",
    "last_accessed_at",
    "created_at",
    "pinned",
    "deleted",
]
VECTOR_COLUMNS = [*COLUMNS, "vector", "text"]
# The first word of a text, after any opening quotes or brackets: what a name in a question is
# matched against (the same pattern runs in Python and in Arrow's RE2).
OPENER_PATTERN = "^[\\s\"'(\\[]*(?P<opener>[^\\s:,.;!?'\u2019)\\]]+)"
_OPENER = re.compile(OPENER_PATTERN)
KIND_CODES: dict[str, int] = {kind: code for code, kind in enumerate(KINDS)}
_SCALARS: dict[str, type[np.generic]] = {
    "kind": np.int8,
    "importance": np.float64,
    "utility": np.float64,
    "last_accessed_us": np.int64,
    "created_us": np.int64,
    "pinned": np.bool_,
    "deleted": np.bool_,
}


_BLOCK_ROWS = 65_536


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def to_us(moment: datetime) -> int:
    """Microseconds since the epoch, exactly (a naive time is taken as local time)."""
    aware = moment if moment.tzinfo is not None else moment.astimezone()
    return (aware - _EPOCH) // _MICROSECOND


def from_us(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


class RecordMirror:
    def __init__(self) -> None:
        self.ids: list[str] = []
        self._position: dict[str, int] = {}
        self._buffers: dict[str, NDArray[Any]] = {
            name: np.zeros(0, dtype=dtype) for name, dtype in _SCALARS.items()
        }
        # Every record's embedding scaled to length 1, so a similarity is one product.
        self._directions: NDArray[np.float32] | None = None
        # Each record's opener as a code into _opener_codes (-1: none); kept with the vectors.
        self._openers: NDArray[np.int32] | None = None
        self._opener_codes: dict[str, int] = {}
        # The other stored fields, when loaded with every column.
        self._rows: StoredRows | None = None
        # Changes whenever records are added or loaded or a kind changes: what depends on the
        # order and kinds of the records (episode neighbours) is rebuilt when it moves.
        self.layout_version = 0
        self.kind = np.zeros(0, dtype=np.int8)
        self.importance = np.zeros(0, dtype=np.float64)
        self.utility = np.zeros(0, dtype=np.float64)
        self.last_accessed_us = np.zeros(0, dtype=np.int64)
        self.created_us = np.zeros(0, dtype=np.int64)
        self.pinned = np.zeros(0, dtype=bool)
        self.deleted = np.zeros(0, dtype=bool)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def has_vectors(self) -> bool:
        return self._directions is not None

    @property
    def directions(self) -> NDArray[np.float32]:
        """Every record's embedding scaled to length 1 (zeros for a zero or non-finite one),
        one row each; only when loaded with VECTOR_COLUMNS."""
        if self._directions is None:
            raise ValueError("this mirror keeps no vectors (load it with VECTOR_COLUMNS)")
        return self._directions[: len(self.ids)]

    def load(self, table: pa.Table) -> None:
        """Replace the copy with ``table``: COLUMNS, or VECTOR_COLUMNS to keep vectors, and
        any more columns to keep those too (every column: whole records, see rows_at)."""
        self.ids = table.column("id").to_pylist()
        self._position = {record_id: index for index, record_id in enumerate(self.ids)}
        kinds = table.column("kind").to_pylist()
        self._buffers = {
            "kind": np.array([KIND_CODES.get(k, -1) for k in kinds], dtype=np.int8),
            "importance": table.column("importance").to_numpy().astype(np.float64),
            "utility": table.column("utility").to_numpy().astype(np.float64),
            "last_accessed_us": _micros(table.column("last_accessed_at")),
            "created_us": _micros(table.column("created_at")),
            "pinned": table.column("pinned").to_numpy(zero_copy_only=False).astype(bool),
            "deleted": table.column("deleted").to_numpy(zero_copy_only=False).astype(bool),
        }
        self._directions = self._openers = None
        self._opener_codes = {}
        if "vector" in table.column_names:
            self._directions = _unit_rows(_matrix(table.column("vector")))
            encoded = openers(table.column("text")).combine_chunks().dictionary_encode()
            self._opener_codes = {
                word: code for code, word in enumerate(encoded.dictionary.to_pylist())
            }
            self._openers = encoded.indices.fill_null(-1).to_numpy().astype(np.int32)
        others = [name for name in table.column_names if name not in (*COLUMNS, "vector")]
        # The ranking columns live in the arrays; the kind is kept in case a name is unknown.
        self._rows = StoredRows(table.select(["id", "kind", *others])) if others else None
        self._publish()

    def extend(self, rows: Sequence[dict[str, object]]) -> None:
        """Add new records (rows as stored: the COLUMNS keys, and "vector" if kept)."""
        if not rows:
            return
        start = len(self.ids)
        for offset, row in enumerate(rows):
            record_id = str(row["id"])
            self._position[record_id] = start + offset
            self.ids.append(record_id)
        added = {
            "kind": [KIND_CODES[str(r["kind"])] for r in rows],
            "importance": [r["importance"] for r in rows],
            "utility": [r.get("utility", 0.0) for r in rows],
            "last_accessed_us": [_us(r["last_accessed_at"]) for r in rows],
            "created_us": [_us(r["created_at"]) for r in rows],
            "pinned": [r["pinned"] for r in rows],
            "deleted": [r["deleted"] for r in rows],
        }
        for name, values in added.items():
            buffer = _room(self._buffers[name], start + len(rows))
            buffer[start : start + len(rows)] = np.asarray(values, dtype=buffer.dtype)
            self._buffers[name] = buffer
        if self._directions is not None:
            vectors = np.asarray([r["vector"] for r in rows], dtype=np.float32)
            self._directions = _room(self._directions, start + len(rows))
            self._directions[start : start + len(rows)] = _unit_rows(vectors)
        if self._openers is not None:
            codes = [self._opener_code(str(r["text"])) for r in rows]
            self._openers = _room(self._openers, start + len(rows))
            self._openers[start : start + len(rows)] = codes
        if self._rows is not None:
            self._rows.extend(rows)
        self._publish()

    def positions(self, record_ids: Sequence[str]) -> NDArray[np.int64]:
        """Each record's place in these arrays (-1: unknown)."""
        return np.array([self._position.get(i, -1) for i in record_ids], dtype=np.int64)

    def set(self, record_id: str, **values: Any) -> None:
        """Change one record's values, given as stored (``kind`` a name, times datetimes,
        ``vector`` a list); those this copy does not keep are ignored."""
        index = self._position.get(record_id)
        if index is None:
            return
        for name, value in values.items():
            if name == "last_accessed_at":
                self.last_accessed_us[index] = to_us(value)
            elif name == "kind":
                self.kind[index] = KIND_CODES[value]
                self.layout_version += 1
            elif name in ("importance", "utility", "pinned", "deleted"):
                getattr(self, name)[index] = value
            elif name == "vector" and self._directions is not None:
                vector = np.asarray(value, dtype=np.float32).reshape(1, -1)
                self._directions[index] = _unit_rows(vector)[0]
            elif name == "text" and self._openers is not None:
                self._openers[index] = self._opener_code(str(value))
        if self._rows is not None:
            self._rows.change(index, values)

    def rows_at(self, positions: Sequence[int]) -> list[dict[str, Any]]:
        """The records at ``positions`` as stored, without their vectors (only when loaded
        with every column): the ranking columns come from the arrays, which are current."""
        if self._rows is None:
            raise ValueError("this mirror keeps no rows (load it with every column)")
        rows = self._rows.at(positions)
        for row, index in zip(rows, positions, strict=True):
            code = int(self.kind[index])
            if code >= 0:
                row["kind"] = KINDS[code]
            row["importance"] = int(self.importance[index])
            row["utility"] = float(self.utility[index])
            row["last_accessed_at"] = from_us(int(self.last_accessed_us[index]))
            row["created_at"] = from_us(int(self.created_us[index]))
            row["pinned"] = bool(self.pinned[index])
            row["deleted"] = bool(self.deleted[index])
        return rows

    def touch(self, record_ids: Iterable[str], moment: datetime) -> None:
        positions = [self._position[r] for r in record_ids if r in self._position]
        self.last_accessed_us[positions] = to_us(moment)

    def similarity(self, query: NDArray[np.float32]) -> NDArray[np.float32]:
        """Cosine similarity of ``query`` to every record, in mirror order (the same values as
        ``scoring.cosine`` up to float32 rounding)."""
        if self._directions is None:
            raise ValueError("this mirror keeps no vectors (load it with VECTOR_COLUMNS)")
        direction = _unit_rows(np.asarray(query, dtype=np.float32).reshape(1, -1))[0]
        # A matrix-vector product: faster here than one matrix product for several queries.
        products: NDArray[np.float32] = self.directions @ direction
        return products

    def opens_with(self, name: str) -> NDArray[np.bool_]:
        """Which records' texts open with ``name`` (only when loaded with VECTOR_COLUMNS)."""
        if self._openers is None:
            raise ValueError("this mirror keeps no openers (load it with VECTOR_COLUMNS)")
        code = self._opener_codes.get(name)
        openers = self._openers[: len(self.ids)]
        return np.zeros(len(self.ids), dtype=bool) if code is None else openers == code

    def _opener_code(self, text: str) -> int:
        match = _OPENER.match(text)
        if match is None:
            return -1
        return self._opener_codes.setdefault(match.group("opener"), len(self._opener_codes))

    def mask(
        self,
        kinds: Sequence[Kind] | None,
        pinned: bool | None,
        since: datetime | None,
        until: datetime | None,
        deleted: bool | None,
    ) -> NDArray[np.bool_]:
        """Which records pass the filters this copy can evaluate (``deleted``: as in
        Filters)."""
        keep = np.ones(len(self.ids), dtype=bool)
        if deleted is not None:
            keep &= self.deleted == deleted
        if kinds:
            keep &= np.isin(self.kind, [KIND_CODES[k] for k in kinds])
        if pinned is not None:
            keep &= self.pinned == pinned
        if since is not None:
            keep &= self.created_us >= to_us(since)
        if until is not None:
            keep &= self.created_us <= to_us(until)
        return keep

    def _publish(self) -> None:
        """Point the public arrays at the first len(ids) entries of the buffers."""
        size = len(self.ids)
        self.kind = self._buffers["kind"][:size]
        self.importance = self._buffers["importance"][:size]
        self.utility = self._buffers["utility"][:size]
        self.last_accessed_us = self._buffers["last_accessed_us"][:size]
        self.created_us = self._buffers["created_us"][:size]
        self.pinned = self._buffers["pinned"][:size]
        self.deleted = self._buffers["deleted"][:size]
        self.layout_version += 1


def openers(texts: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """The opener of each text (null where a text opens with no word)."""
    return pc.struct_field(pc.extract_regex(texts, pattern=OPENER_PATTERN), "opener")


def _room(buffer: NDArray[Any], size: int) -> NDArray[Any]:
    """``buffer``, or a copy at least twice as long when it holds fewer than ``size`` rows."""
    if len(buffer) >= size:
        return buffer
    grown = np.zeros((max(size, 2 * len(buffer), 1024), *buffer.shape[1:]), dtype=buffer.dtype)
    grown[: len(buffer)] = buffer
    return grown


def _matrix(column: pa.ChunkedArray) -> NDArray[np.float32]:
    """A fixed-size-list vector column as one (rows, dimensions) float32 array."""
    combined = column.combine_chunks()
    rows = len(combined)
    if rows == 0:
        width = combined.type.list_size if pa.types.is_fixed_size_list(combined.type) else 0
        return np.zeros((0, max(width, 0)), dtype=np.float32)
    flat = combined.flatten().to_numpy(zero_copy_only=False)
    return np.ascontiguousarray(flat.reshape(rows, -1), dtype=np.float32)


def _unit_rows(vectors: NDArray[np.float32]) -> NDArray[np.float32]:
    """Each row scaled to length 1; norms are taken in float64 (a float32 square of a large
    value overflows), a block at a time to bound the extra memory. A zero row, or one with a
    non-finite value, becomes zeros: it is similar to nothing."""
    unit = np.zeros(vectors.shape, dtype=np.float32)
    for start in range(0, len(vectors), _BLOCK_ROWS):
        block = vectors[start : start + _BLOCK_ROWS].astype(np.float64)
        norms = np.linalg.norm(block, axis=1, keepdims=True)
        usable = np.isfinite(norms) & (norms > 0)
        unit[start : start + _BLOCK_ROWS] = np.where(usable, block / np.where(usable, norms, 1), 0)
    return unit


def _us(value: object) -> int:
    if not isinstance(value, datetime):
        raise TypeError(f"expected a datetime, got {value!r}")
    return to_us(value)


def _micros(column: pa.ChunkedArray) -> NDArray[np.int64]:
    micros: NDArray[np.int64] = (
        column.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()).to_numpy().astype(np.int64)
    )
    return micros
