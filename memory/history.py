"""Every change to a memory, kept so it can be listed and undone."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import pyarrow as pa

from memory.records import TIMESTAMP, _aware
from memory.table import Table, in_list, quote

# "retire": a knowledge-graph fact the user said no longer holds (memory.graph.edit).
Action = Literal["add", "edit", "delete", "restore", "merge", "rate", "undo", "retire"]

HISTORY_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("record_id", pa.string(), nullable=False),
        pa.field("action", pa.string(), nullable=False),
        pa.field("before", pa.string(), nullable=False),
        pa.field("after", pa.string(), nullable=False),
        pa.field("at", TIMESTAMP, nullable=False),
        pa.field("undone", pa.bool_(), nullable=False),
    ]
)


@dataclass(frozen=True)
class Change:
    id: str
    record_id: str
    action: Action
    before: dict[str, Any]
    after: dict[str, Any]
    at: datetime
    undone: bool

    def describe(self) -> str:
        fields = ", ".join(sorted(set(self.before) | set(self.after)))
        return f"{self.at:%Y-%m-%d %H:%M} {self.action} {fields}".strip()


def new_change(
    record_id: str, action: Action, before: dict[str, Any], after: dict[str, Any], at: datetime
) -> dict[str, Any]:
    return {
        # Sortable by when it was written, even when the injected clock stands still.
        "id": f"{time.time_ns():020d}-{uuid.uuid4().hex[:12]}",
        "record_id": record_id,
        "action": action,
        "before": json.dumps(before, default=str, ensure_ascii=False),
        "after": json.dumps(after, default=str, ensure_ascii=False),
        "at": at,
        "undone": False,
    }


def change_from_row(row: dict[str, Any]) -> Change:
    return Change(
        id=row["id"],
        record_id=row["record_id"],
        action=row["action"],
        before=json.loads(row["before"]),
        after=json.loads(row["after"]),
        at=_aware(row["at"]),
        undone=bool(row["undone"]),
    )


class History:
    def __init__(self, table: Table) -> None:
        self.table = table

    def record(self, changes: list[dict[str, Any]]) -> None:
        if changes:
            self.table.add(changes)

    def list(self, record_id: str | None = None, limit: int = 100) -> list[Change]:
        where = f"record_id = {quote(record_id)}" if record_id else None
        rows = self.table.query(where=where).to_pylist()
        changes = sorted(
            (change_from_row(r) for r in rows), key=lambda c: (c.at, c.id), reverse=True
        )
        return changes[:limit]

    def list_for(self, record_ids: Sequence[str]) -> tuple[Change, ...]:
        """The changes to any of ``record_ids``, newest first."""
        if not record_ids:
            return ()
        rows = self.table.query(where=in_list("record_id", record_ids)).to_pylist()
        changes = (change_from_row(r) for r in rows)
        return tuple(sorted(changes, key=lambda c: (c.at, c.id), reverse=True))

    def get(self, change_id: str) -> Change | None:
        rows = self.table.query(where=f"id = {quote(change_id)}").to_pylist()
        return change_from_row(rows[0]) if rows else None

    def mark_undone(self, change_id: str) -> None:
        self.table.update(f"id = {quote(change_id)}", {"undone": True})
