"""The memory record: what the memory stream holds, and its LanceDB schema."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, get_args

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

Kind = Literal["observation", "reflection", "plan", "fact", "summary"]
# pending: stored with nothing to rate it (DEFAULT_IMPORTANCE meanwhile); rated: rated on the
# importance scale (memory/importance.py); given: set by the caller or the user; fallback: the
# LLM rater of earlier versions failed, and the record awaits its rating like a pending one.
ImportanceState = Literal["pending", "rated", "given", "fallback"]
KINDS: tuple[Kind, ...] = get_args(Kind)
# The columns a listing of records can be sorted by.
SortKey = Literal["created_at", "last_accessed_at", "importance", "utility", "event_time"]
EMBEDDING_DIMENSIONS = 384
# Stored until a record is rated.
DEFAULT_IMPORTANCE = 3


def utc_now() -> datetime:
    return datetime.now(UTC)


# What the stores read the time from (utc_now, or a test's clock).
Clock = Callable[[], datetime]


# Sources that name who wrote the memory after a colon: a sub-agent's task id, or the name an
# MCP client gave itself.
NAMED_SOURCES = ("subagent:", "mcp:")


def is_valid_source(source: str) -> bool:
    """user | assistant | tool | import | vault | subagent:<id> | mcp:<client name>."""
    if source in ("user", "assistant", "tool", "import", "vault"):
        return True
    return any(source.startswith(p) and len(source) > len(p) for p in NAMED_SOURCES)


@dataclass(frozen=True)
class MemoryRecord:
    id: str
    text: str
    kind: Kind
    created_at: datetime
    last_accessed_at: datetime
    importance: int
    sources: tuple[str, ...]
    event_time: datetime | None = None
    importance_state: ImportanceState = "pending"
    evidence: tuple[str, ...] = ()
    pinned: bool = False
    utility: float = 0.0
    deleted: bool = False
    updated_at: datetime | None = None
    embedding: NDArray[np.float32] | None = field(default=None, compare=False, repr=False)

    def with_changes(self, **changes: Any) -> MemoryRecord:
        return replace(self, **changes)

    def to_row(self) -> dict[str, Any]:
        if self.embedding is None:
            raise ValueError(f"record {self.id} has no embedding")
        return {
            "id": self.id,
            "text": self.text,
            "kind": self.kind,
            "created_at": self.created_at,
            "last_accessed_at": self.last_accessed_at,
            "event_time": self.event_time,
            "importance": self.importance,
            "importance_state": self.importance_state,
            "evidence": list(self.evidence),
            "sources": list(self.sources),
            "pinned": self.pinned,
            "utility": self.utility,
            "deleted": self.deleted,
            "updated_at": self.updated_at or self.created_at,
            "vector": self.embedding.astype(np.float32).tolist(),
        }

    @staticmethod
    def from_row(row: dict[str, Any]) -> MemoryRecord:
        vector = row.get("vector")
        return MemoryRecord(
            id=row["id"],
            text=row["text"],
            kind=row["kind"],
            created_at=_aware(row["created_at"]),
            last_accessed_at=_aware(row["last_accessed_at"]),
            event_time=_aware(row["event_time"]) if row.get("event_time") else None,
            importance=int(row["importance"]),
            importance_state=row["importance_state"],
            evidence=tuple(row.get("evidence") or ()),
            sources=tuple(row.get("sources") or ()),
            pinned=bool(row["pinned"]),
            utility=float(row["utility"]),
            deleted=bool(row["deleted"]),
            updated_at=_aware(row["updated_at"]) if row.get("updated_at") else None,
            embedding=None if vector is None else np.asarray(vector, dtype=np.float32),
        )


def _aware(value: Any) -> datetime:
    """A timezone-aware datetime from what Arrow hands back (naive values are UTC)."""
    converted: datetime = value.to_pydatetime() if hasattr(value, "to_pydatetime") else value
    return converted if converted.tzinfo else converted.replace(tzinfo=UTC)


TIMESTAMP = pa.timestamp("us", tz="UTC")


def records_schema(dimensions: int = EMBEDDING_DIMENSIONS) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("text", pa.string(), nullable=False),
            pa.field("kind", pa.string(), nullable=False),
            pa.field("created_at", TIMESTAMP, nullable=False),
            pa.field("last_accessed_at", TIMESTAMP, nullable=False),
            pa.field("event_time", TIMESTAMP, nullable=True),
            pa.field("importance", pa.int8(), nullable=False),
            pa.field("importance_state", pa.string(), nullable=False),
            pa.field("evidence", pa.list_(pa.string()), nullable=False),
            pa.field("sources", pa.list_(pa.string()), nullable=False),
            pa.field("pinned", pa.bool_(), nullable=False),
            pa.field("utility", pa.float32(), nullable=False),
            pa.field("deleted", pa.bool_(), nullable=False),
            pa.field("updated_at", TIMESTAMP, nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dimensions), nullable=False),
        ]
    )
