"""The protocol's memory messages: what the memory screen (and the MCP server) asks of the
service and what it gets back, and the search of recall storage, the conversation as it was
said. Each request carries the client's ``ref``; the answer (or ``Failed``) echoes it and goes
to that client alone. A change also goes to every client as ``MemoryChangedByUser``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, get_args

from pydantic import Field

from assistant.protocol.common import Answer, ClientText, Wire

# The memory package's own (memory/records.py), written out here so that a client does not
# import the memory package (numpy and pyarrow) to speak the protocol; a test keeps them equal.
Kind = Literal["observation", "reflection", "plan", "fact", "summary"]
KINDS: tuple[Kind, ...] = get_args(Kind)
SortKey = Literal["created_at", "last_accessed_at", "importance", "utility", "event_time"]

# The most rows one page may ask for (a screenful is about 40).
MAX_PAGE_SIZE = 500
# The longest text a client may give a new memory (a huge paste is refused, not cut): even
# escaped, far under the wire's longest line.
MAX_MEMORY_CHARS = 50_000


# Client to service


class MemoryQuery(Wire):
    """A page of memories: the newest first (or by ``sort``), or, with a ``query``, the most
    relevant first by the agent's own hybrid search (words and meaning)."""

    type: Literal["memory_query"] = "memory_query"
    ref: str
    query: ClientText = ""
    kinds: list[Kind] | None = None
    sources: list[str] | None = None
    pinned: bool | None = None
    since: datetime | None = None
    until: datetime | None = None
    # Deleted memories only (to restore them), instead of the live ones.
    deleted: bool = False
    sort: SortKey = "created_at"
    descending: bool = True
    page: int = Field(1, ge=1)
    page_size: int = Field(50, ge=1, le=MAX_PAGE_SIZE)


class MemoryOpen(Wire):
    """One memory in full: what it cites (a tree, for reflections) and its change history."""

    type: Literal["memory_open"] = "memory_open"
    ref: str
    id: str


class MemoryEdit(Wire):
    """Change a memory's text, importance or pin; fields left out stay as they are."""

    type: Literal["memory_edit"] = "memory_edit"
    ref: str
    id: str
    text: ClientText | None = None
    importance: int | None = Field(None, ge=1, le=10)
    pinned: bool | None = None


class MemoryDelete(Wire):
    """Delete a memory (it can be restored), or restore a deleted one."""

    type: Literal["memory_delete"] = "memory_delete"
    ref: str
    id: str
    restore: bool = False


class MemoryUndo(Wire):
    """Undo a change (by default the newest one not yet undone)."""

    type: Literal["memory_undo"] = "memory_undo"
    ref: str
    change_id: str | None = None


class AddMemory(Wire):
    """Keep a new memory, checked as an edit on screen is (``source``: who wrote it, e.g.
    ``mcp:<client name>``); a near-copy of a recent one is merged into it instead."""

    type: Literal["memory_add"] = "memory_add"
    ref: str
    text: ClientText = Field(max_length=MAX_MEMORY_CHARS)
    kind: Kind = "observation"
    importance: int | None = Field(None, ge=1, le=10)
    pinned: bool = False
    source: str = "user"


class RecallQuery(Wire):
    """Recall storage, every message of the conversation as it was said: with a ``query``,
    ranked by words and meaning together; without one, those in the time range, oldest
    first."""

    type: Literal["recall_query"] = "recall_query"
    ref: str
    query: ClientText = ""
    since: datetime | None = None
    until: datetime | None = None
    page: int = Field(1, ge=1)
    page_size: int = Field(10, ge=1, le=MAX_PAGE_SIZE)


class CoreQuery(Wire):
    """The core memory blocks (persona, human) the agent sees in every prompt."""

    type: Literal["core_query"] = "core_query"
    ref: str


class CoreEdit(Wire):
    """Replace a core memory block's whole text."""

    type: Literal["core_edit"] = "core_edit"
    ref: str
    label: str
    value: ClientText


MemoryRequest = (
    MemoryQuery
    | MemoryOpen
    | MemoryEdit
    | MemoryDelete
    | MemoryUndo
    | AddMemory
    | RecallQuery
    | CoreQuery
    | CoreEdit
)


# Service to client


class MemoryRow(Wire):
    id: str
    kind: Kind
    text: str
    created_at: datetime
    last_accessed_at: datetime
    event_time: datetime | None = None
    importance: int
    # pending | rated | given | fallback (see memory/records.py)
    importance_state: str
    sources: list[str]
    pinned: bool
    deleted: bool
    evidence: list[str] = []
    # The search score (relevance, 0-1) when the page answers a query.
    score: float | None = None


class MemoryPage(Answer):
    type: Literal["memory_page"] = "memory_page"
    rows: list[MemoryRow]
    total: int
    page: int
    page_size: int
    # Milliseconds the service took to find the page (shown, and read by the benchmark).
    took_ms: float


class Evidence(Wire):
    """A memory and the memories it cites, recursively."""

    row: MemoryRow
    cites: list[Evidence] = []


class ChangeRow(Wire):
    id: str
    action: str
    at: datetime
    before: dict[str, object]
    after: dict[str, object]
    undone: bool


class MemoryDetail(Answer):
    type: Literal["memory_detail"] = "memory_detail"
    evidence: Evidence
    changes: list[ChangeRow]


class MemoryDone(Answer):
    """A change was made: the memory as it is now, and what was done, in words."""

    type: Literal["memory_done"] = "memory_done"
    row: MemoryRow
    text: str


class RecallRow(Wire):
    id: str
    seq: int
    role: str
    text: str
    at: datetime


class RecallPage(Answer):
    type: Literal["recall_page"] = "recall_page"
    rows: list[RecallRow]
    total: int
    page: int
    page_size: int


class MemoryChangedByUser(Wire):
    """Sent to every client when someone changed a memory, so open lists refresh."""

    type: Literal["memory_changed"] = "memory_changed"
    id: str
    text: str


class CoreBlock(Wire):
    label: str
    description: str
    value: str
    limit: int


class CoreBlocks(Answer):
    type: Literal["core_blocks"] = "core_blocks"
    blocks: list[CoreBlock]


class MemoryStats(Wire):
    """For the status bar: memories kept, and the memory's background work."""

    type: Literal["memory_stats"] = "memory_stats"
    count: int
    ratings_pending: int
    reflecting: bool = False


MemoryAnswer = MemoryPage | MemoryDetail | MemoryDone | RecallPage | CoreBlocks
MemoryUpdate = MemoryAnswer | MemoryChangedByUser | MemoryStats
