"""Which records a listing, search or retrieval considers, as a LanceDB filter."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memory.records import Kind
from memory.table import in_list, quote, timestamp_literal


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
            clauses.append(f"created_at >= {timestamp_literal(self.since)}")
        if self.until is not None:
            clauses.append(f"created_at <= {timestamp_literal(self.until)}")
        if self.sources:
            clauses.append(
                "(" + " OR ".join(f"array_has(sources, {quote(s)})" for s in self.sources) + ")"
            )
        return " AND ".join(clauses) or None
