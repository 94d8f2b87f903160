"""Changing stored records (edit, delete, restore), each change kept in the history, and
undoing a change."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from memory.embedder import Embedder
from memory.history import Change, History, new_change
from memory.records import KINDS, Clock, MemoryRecord
from memory.stream.stored import MemoryRequestError, StoredRecords
from memory.text import MAX_EMBED_CHARS, storable_text
from memory.timeparse import resolve_event_time

EDITABLE = ("text", "importance", "pinned", "kind", "event_time")


class MemoryEditor:
    def __init__(
        self, stored: StoredRecords, history: History, embedder: Embedder, clock: Clock
    ) -> None:
        self._stored = stored
        self._history = history
        self._embedder = embedder
        self._clock = clock

    def edit(self, record_id: str, **changes: Any) -> MemoryRecord:
        """Change text (re-embedded, event time re-resolved), importance, pinned, kind or
        event_time; the change is kept in the history."""
        unknown = set(changes) - set(EDITABLE)
        if unknown:
            raise MemoryRequestError(
                f"cannot edit {', '.join(sorted(unknown))}; editable: {EDITABLE}"
            )
        record = self._stored.require(record_id)
        now = self._clock()
        values = self._validated(changes, record, now)
        before = {name: _plain(getattr(record, name)) for name in values if name in EDITABLE}
        after = {name: _plain(values[name]) for name in before}
        self._stored.write(record_id, {**values, "updated_at": now})
        self._history.record([new_change(record_id, "edit", before, after, now)])
        return self._stored.require(record_id)

    def _validated(
        self, changes: dict[str, Any], record: MemoryRecord, now: datetime
    ) -> dict[str, Any]:
        values: dict[str, Any] = {}
        if "text" in changes:
            text = storable_text(str(changes["text"]))
            if not text:
                raise MemoryRequestError("a memory needs some text")
            values["text"] = text
            values["vector"] = self._embedder.embed([text[:MAX_EMBED_CHARS]])[0].tolist()
            if "event_time" not in changes:
                resolved = resolve_event_time(text, record.created_at)
                values["event_time"] = resolved.when if resolved else None
        if "importance" in changes:
            importance = int(changes["importance"])
            if not 1 <= importance <= 10:
                raise MemoryRequestError(f"importance must be 1-10, not {importance}")
            values["importance"] = importance
            values["importance_state"] = "given"
        if "pinned" in changes:
            values["pinned"] = bool(changes["pinned"])
        if "kind" in changes:
            if changes["kind"] not in KINDS:
                raise MemoryRequestError(f"unknown kind {changes['kind']!r}")
            values["kind"] = changes["kind"]
        if "event_time" in changes:
            values["event_time"] = changes["event_time"]
        return values

    def delete(self, record_id: str) -> None:
        """Soft delete: hidden from retrieval and lists, restorable."""
        self._set_deleted(record_id, True, "delete")

    def restore(self, record_id: str) -> None:
        self._set_deleted(record_id, False, "restore")

    def _set_deleted(
        self, record_id: str, deleted: bool, action: Literal["delete", "restore"]
    ) -> None:
        record = self._stored.require(record_id)
        now = self._clock()
        self._stored.write(record_id, {"deleted": deleted, "updated_at": now})
        self._history.record(
            [new_change(record_id, action, {"deleted": record.deleted}, {"deleted": deleted}, now)]
        )

    def changes(self, record_id: str | None = None, limit: int = 100) -> list[Change]:
        return self._history.list(record_id, limit)

    def undo(self, change_id: str | None = None) -> Change:
        """Undo one change (default: the newest one not yet undone); the undo is itself a change."""
        change = self._history.get(change_id) if change_id else self._last_undoable()
        if change is None:
            raise MemoryRequestError(
                "nothing to undo" if change_id is None else f"no change {change_id}"
            )
        if change.undone:
            raise MemoryRequestError(f"change {change.id} was already undone")
        if change.action == "add":
            self.delete(change.record_id)
        elif change.action == "delete":
            self.restore(change.record_id)
        elif change.action == "restore":
            self.delete(change.record_id)
        elif change.action == "edit":
            restored = {k: _revive(k, v) for k, v in change.before.items()}
            self.edit(change.record_id, **restored)
        else:
            raise MemoryRequestError(f"a {change.action} cannot be undone")
        self._history.mark_undone(change.id)
        return change

    def _last_undoable(self) -> Change | None:
        for change in self._history.list(limit=1_000):
            if not change.undone and change.action in ("add", "edit", "delete", "restore"):
                return change
        return None


def _plain(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _revive(name: str, value: Any) -> Any:
    if name == "event_time" and isinstance(value, str):
        return datetime.fromisoformat(value)
    return value
