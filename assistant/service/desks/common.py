"""What the desks share: memory records and changes as wire rows, quoted text, and what a
request can fail with, in one line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from assistant.agent.core_memory import CoreMemoryError
from assistant.agent.tools import Stores
from assistant.protocol.common import Answer
from assistant.protocol.memory import ChangeRow, Evidence, MemoryRow
from assistant.service.hub import Client
from memory.database import DatabaseError
from memory.graph.edit import FactEditError
from memory.history import Change
from memory.locking import LockTimeout
from memory.records import MemoryRecord
from memory.stream import EvidenceNode, MemoryRequestError

# How much of a memory's text a change description quotes.
QUOTED_CHARS = 120
# What a memory request can fail with; the client gets the message in one line.
MEMORY_ERRORS = (
    MemoryRequestError,
    FactEditError,
    CoreMemoryError,
    DatabaseError,
    LockTimeout,
    OSError,
    ValueError,
)

# The answer to a memory request and, for a change, the changed id and what was done.
Reply = tuple[Answer, tuple[str, str] | None]
# Makes the handler that answers a request in a worker thread, from the stores, with one of
# the desks' ``answer`` functions.
InWorker = Callable[[Callable[[Stores, Any], Reply]], Callable[[Client, Any], None]]


def row_of(record: MemoryRecord, score: float | None = None) -> MemoryRow:
    return MemoryRow(
        id=record.id,
        kind=record.kind,
        text=record.text,
        created_at=record.created_at,
        last_accessed_at=record.last_accessed_at,
        event_time=record.event_time,
        importance=record.importance,
        importance_state=record.importance_state,
        sources=list(record.sources),
        pinned=record.pinned,
        deleted=record.deleted,
        evidence=list(record.evidence),
        score=score,
    )


def evidence_of(node: EvidenceNode) -> Evidence:
    return Evidence(row=row_of(node.record), cites=[evidence_of(c) for c in node.children])


def change_row(change: Change) -> ChangeRow:
    return ChangeRow(
        id=change.id,
        action=change.action,
        at=change.at,
        before=change.before,
        after=change.after,
        undone=change.undone,
    )


def one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text or type(error).__name__


def quote(text: str) -> str:
    shown = text if len(text) <= QUOTED_CHARS else text[: QUOTED_CHARS - 1] + "…"
    return f'"{shown}"'
