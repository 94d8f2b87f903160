"""The sync decisions, apart from any file or store: what a note's changes do to its memory,
and then what becomes of the note.

Both sides are compared with what they agreed on at the last sync (``Synced``). A field only
one side changed takes that side's value. A field both changed goes to the later change (the
note's time is its file's, the memory's its ``updated_at``), and the other is kept in the
memory's history: the older change is applied first, then the later one over it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from memory.records import MemoryRecord
from memory.vault.parse import NoteView, parse_note
from memory.vault.state import Synced, digest

EDITABLE = ("text", "importance", "pinned")


@dataclass(frozen=True)
class Step:
    """One change to the memory, made as an edit on screen is."""

    action: Literal["edit", "delete", "restore"]
    changes: dict[str, Any] = field(default_factory=dict)


def reconcile(
    base: Synced, record: MemoryRecord, note: NoteView | None, note_time: datetime
) -> list[Step]:
    """The steps that bring the note's changes into ``record``; ``note`` is None when the user
    deleted it. Call only when the note differs from the file last synced."""
    if note is None:
        return [] if record.deleted else [Step("delete")]
    changes = {
        name: value
        for name, value in _stated(note).items()
        if _differs(base, name, value) and value != getattr(record, name)
    }
    later = note_time > (record.updated_at or record.created_at)
    steps: list[Step] = []
    # A note back in the vault after its memory was deleted (from the trash, say) brings the
    # memory back; an edit after a delete made in the app does too.
    if record.deleted and (base.deleted or (later and changes)):
        steps.append(Step("restore"))
    if changes:
        steps.append(Step("edit", changes))
        theirs = {
            name: getattr(record, name)
            for name in changes
            if _differs(base, name, getattr(record, name))
        }
        if theirs and not later:
            steps.append(Step("edit", theirs))
    return steps


def _stated(note: NoteView) -> dict[str, Any]:
    """The editable fields the note states (a property the user removed is left as it is)."""
    stated = {"text": note.text, "importance": note.importance, "pinned": note.pinned}
    return {name: value for name, value in stated.items() if value is not None}


def _differs(base: Synced, name: str, value: Any) -> bool:
    if name == "text":
        return bool(digest(value) != base.text)
    return bool(value != getattr(base, name))


FileAction = Literal["write", "remove", "keep"]


def file_action(record: MemoryRecord | None, note: NoteView | None, rendered: str) -> FileAction:
    """What to do with the note once the memory is as it should be: ``rendered`` is the note
    the memory makes now. A note that says the same as it, however its YAML is written, is
    kept as the user left it."""
    if record is None or record.deleted:
        return "remove"
    if note is not None and note == parse_note(rendered.encode("utf-8")):
        return "keep"
    return "write"
