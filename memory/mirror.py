"""An in-memory copy of the few columns retrieval ranks by, one numpy array each.

It lets retrieval pick the records that score high on recency and importance (terms that do
not depend on the query) with one vectorised pass, without a table scan per query. At a million
records the scalar columns take about 30 MB. Only this process writes the table (the service
owns the store), so the copy is kept current by the store's own writes.

Loaded with ``VECTOR_COLUMNS`` (instead of ``COLUMNS``) it also keeps every record's embedding
(384 float32 = 1.5 KB a record: 15 MB at 10k, 150 MB at 100k, 1.5 GB at 1M), and
:meth:`RecordMirror.similarity` gives the cosine of a query to *every* record in one
matrix-vector product (about 1 ms at 10k, 10 ms at 100k, 150 ms at 1M on 2 cores), so
retrieval can score all records exactly instead of a candidate list.

The arrays are views of buffers that grow by doubling, so adding records in batches costs
amortised O(batch), not a copy of every array per batch. Each attribute is the same object until
records are added or loaded (``_CreationOrder`` in the stream relies on that).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from memory.records import KINDS, Kind

COLUMNS = ["id", "kind", "importance", "last_accessed_at", "created_at", "pinned", "deleted"]
VECTOR_COLUMNS = [*COLUMNS, "vector"]
KIND_CODES: dict[str, int] = {kind: code for code, kind in enumerate(KINDS)}
_SCALARS: dict[str, type[np.generic]] = {
    "kind": np.int8,
    "importance": np.float64,
    "last_accessed_us": np.int64,
    "created_us": np.int64,
    "pinned": np.bool_,
    "deleted": np.bool_,
}


def to_us(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000)


class RecordMirror:
    def __init__(self) -> None:
        self.ids: list[str] = []
        self._position: dict[str, int] = {}
        self._buffers: dict[str, NDArray[Any]] = {
            name: np.zeros(0, dtype=dtype) for name, dtype in _SCALARS.items()
        }
        self._vectors: NDArray[np.float32] | None = None
        self._inverse_norms: NDArray[np.float32] | None = None
        self.kind = np.zeros(0, dtype=np.int8)
        self.importance = np.zeros(0, dtype=np.float64)
        self.last_accessed_us = np.zeros(0, dtype=np.int64)
        self.created_us = np.zeros(0, dtype=np.int64)
        self.pinned = np.zeros(0, dtype=bool)
        self.deleted = np.zeros(0, dtype=bool)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def has_vectors(self) -> bool:
        return self._vectors is not None

    @property
    def vectors(self) -> NDArray[np.float32]:
        """Every record's embedding, one row each (only when loaded with VECTOR_COLUMNS)."""
        if self._vectors is None:
            raise ValueError("this mirror keeps no vectors (load it with VECTOR_COLUMNS)")
        return self._vectors[: len(self.ids)]

    def load(self, table: pa.Table) -> None:
        """Replace the copy with ``table`` (COLUMNS, or VECTOR_COLUMNS to keep vectors)."""
        self.ids = table.column("id").to_pylist()
        self._position = {record_id: index for index, record_id in enumerate(self.ids)}
        kinds = table.column("kind").to_pylist()
        self._buffers = {
            "kind": np.array([KIND_CODES.get(k, -1) for k in kinds], dtype=np.int8),
            "importance": table.column("importance").to_numpy().astype(np.float64),
            "last_accessed_us": _micros(table.column("last_accessed_at")),
            "created_us": _micros(table.column("created_at")),
            "pinned": table.column("pinned").to_numpy(zero_copy_only=False).astype(bool),
            "deleted": table.column("deleted").to_numpy(zero_copy_only=False).astype(bool),
        }
        self._vectors = self._inverse_norms = None
        if "vector" in table.column_names:
            self._vectors = _matrix(table.column("vector"))
            self._inverse_norms = _inverse_norms(self._vectors)
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
            "last_accessed_us": [_us(r["last_accessed_at"]) for r in rows],
            "created_us": [_us(r["created_at"]) for r in rows],
            "pinned": [r["pinned"] for r in rows],
            "deleted": [r["deleted"] for r in rows],
        }
        for name, values in added.items():
            buffer = _room(self._buffers[name], start + len(rows))
            buffer[start : start + len(rows)] = np.asarray(values, dtype=buffer.dtype)
            self._buffers[name] = buffer
        if self._vectors is not None and self._inverse_norms is not None:
            vectors = np.asarray([r["vector"] for r in rows], dtype=np.float32)
            self._vectors = _room(self._vectors, start + len(rows))
            self._vectors[start : start + len(rows)] = vectors
            self._inverse_norms = _room(self._inverse_norms, start + len(rows))
            self._inverse_norms[start : start + len(rows)] = _inverse_norms(vectors)
        self._publish()

    def positions(self, record_ids: Sequence[str]) -> NDArray[np.int64]:
        """Each record's place in these arrays (-1: unknown)."""
        return np.array([self._position.get(i, -1) for i in record_ids], dtype=np.int64)

    def set(self, record_id: str, **values: object) -> None:
        """Change one record's values (``vector`` too, when vectors are kept)."""
        index = self._position.get(record_id)
        if index is None:
            return
        for name, value in values.items():
            if name == "last_accessed_at" and isinstance(value, datetime):
                self.last_accessed_us[index] = to_us(value)
            elif name == "vector":
                if self._vectors is not None and self._inverse_norms is not None:
                    vector = np.asarray(value, dtype=np.float32).reshape(1, -1)
                    self._vectors[index] = vector[0]
                    self._inverse_norms[index] = _inverse_norms(vector)[0]
            else:
                getattr(self, name)[index] = value

    def touch(self, record_ids: Iterable[str], moment: datetime) -> None:
        positions = [self._position[r] for r in record_ids if r in self._position]
        self.last_accessed_us[positions] = to_us(moment)

    def similarity(self, query: NDArray[np.float32]) -> NDArray[np.float32]:
        """Cosine similarity of ``query`` to every record, in mirror order (the same values as
        ``scoring.cosine`` up to float32 rounding)."""
        if self._inverse_norms is None:
            raise ValueError("this mirror keeps no vectors (load it with VECTOR_COLUMNS)")
        query = np.asarray(query, dtype=np.float32)
        scale = np.float32(1.0 / max(float(np.linalg.norm(query)), 1e-12))
        products: NDArray[np.float32] = self.vectors @ (query * scale)
        products *= self._inverse_norms[: len(self.ids)]
        return products

    def mask(
        self,
        kinds: Sequence[Kind] | None,
        pinned: bool | None,
        since: datetime | None,
        until: datetime | None,
        include_deleted: bool,
    ) -> NDArray[np.bool_]:
        """Which records pass the filters this copy can evaluate."""
        keep = np.ones(len(self.ids), dtype=bool)
        if not include_deleted:
            keep &= ~self.deleted
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
        self.last_accessed_us = self._buffers["last_accessed_us"][:size]
        self.created_us = self._buffers["created_us"][:size]
        self.pinned = self._buffers["pinned"][:size]
        self.deleted = self._buffers["deleted"][:size]


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


def _inverse_norms(vectors: NDArray[np.float32]) -> NDArray[np.float32]:
    norms = np.linalg.norm(vectors, axis=1) if len(vectors) else np.zeros(0, dtype=np.float32)
    inverse: NDArray[np.float32] = (1.0 / np.maximum(norms, 1e-12)).astype(np.float32)
    return inverse


def _us(value: object) -> int:
    if not isinstance(value, datetime):
        raise TypeError(f"expected a datetime, got {value!r}")
    return to_us(value)


def _micros(column: pa.ChunkedArray) -> NDArray[np.int64]:
    micros: NDArray[np.int64] = (
        column.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()).to_numpy().astype(np.int64)
    )
    return micros
