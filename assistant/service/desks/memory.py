"""The memory as clients see it: the one place the service turns their memory requests into
calls on the memory package and its records into wire rows (elia's "manager" shape).

Blocking (LanceDB, the embedder): the service calls it from worker threads.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import get_args

from assistant.agent.core_memory import CoreMemory
from assistant.agent.tools import Stores
from assistant.protocol.memory import (
    AddMemory,
    ChangeRow,
    CoreBlock,
    CoreBlocks,
    CoreEdit,
    CoreQuery,
    Evidence,
    MemoryDelete,
    MemoryDetail,
    MemoryDone,
    MemoryEdit,
    MemoryOpen,
    MemoryPage,
    MemoryQuery,
    MemoryRequest,
    MemoryRow,
    MemoryStats,
    MemoryUndo,
    RecallPage,
    RecallQuery,
    RecallRow,
)
from assistant.service.desks.common import InWorker, Reply, change_row, evidence_of, quote, row_of
from assistant.service.requests import Requests
from memory.recall import RecallStore
from memory.records import MemoryRecord
from memory.stream import Filters, MemoryRequestError, MemoryStream


@dataclass(frozen=True)
class Changed:
    """A change made for a user: the memory as it is now, and what was done, in words (for
    the user's screen and for the agent's next turn)."""

    row: MemoryRow
    text: str


def register(requests: Requests, in_worker: InWorker) -> None:
    for kind in get_args(MemoryRequest):
        requests.add(kind, in_worker(answer))


def answer(stores: Stores, request: MemoryRequest) -> Reply:
    desk = MemoryDesk(stores)
    done: Changed
    match request:
        case MemoryQuery():
            return desk.query(request), None
        case RecallQuery():
            return desk.recall_page(request), None
        case MemoryOpen():
            detail = MemoryDetail(
                ref=request.ref,
                evidence=desk.evidence(request.id),
                changes=desk.changes(request.id),
            )
            return detail, None
        case CoreQuery():
            return CoreBlocks(ref=request.ref, blocks=desk.core_blocks()), None
        case CoreEdit():
            text = desk.set_core(request.label, request.value)
            return CoreBlocks(ref=request.ref, blocks=desk.core_blocks()), (
                f"core:{request.label}",
                text,
            )
        case AddMemory():
            done = desk.add(request)
        case MemoryEdit():
            done = desk.edit(request)
        case MemoryDelete():
            done = desk.delete(request)
        case MemoryUndo():
            done = desk.undo(request)
    return MemoryDone(ref=request.ref, row=done.row, text=done.text), (done.row.id, done.text)


class MemoryDesk:
    def __init__(self, stores: Stores) -> None:
        self.stream: MemoryStream = stores.stream
        self.core: CoreMemory = stores.core
        self.recall: RecallStore = stores.recall

    # Reading

    def query(self, request: MemoryQuery) -> MemoryPage:
        started = time.perf_counter()
        filters = Filters(
            kinds=tuple(request.kinds) if request.kinds else None,
            sources=tuple(request.sources) if request.sources else None,
            since=request.since,
            until=request.until,
            pinned=request.pinned,
            deleted=request.deleted,
        )
        query = request.query.strip()
        if query:
            found = self.stream.search(query, filters, request.page, request.page_size)
            rows = [row_of(m.record, score=m.relevance) for m in found.items]
            total = found.total
        else:
            page = self.stream.list_memories(
                filters, request.sort, request.descending, request.page, request.page_size
            )
            rows = [row_of(record) for record in page.items]
            total = page.total
        return MemoryPage(
            ref=request.ref,
            rows=rows,
            total=total,
            page=request.page,
            page_size=request.page_size,
            took_ms=(time.perf_counter() - started) * 1000,
        )

    def recall_page(self, request: RecallQuery) -> RecallPage:
        found = self.recall.search(
            request.query, request.page, request.page_size, request.since, request.until
        )
        rows = [
            RecallRow(id=m.id, seq=m.seq, role=m.role, text=m.text, at=m.at) for m in found.items
        ]
        return RecallPage(
            ref=request.ref,
            rows=rows,
            total=found.total,
            page=request.page,
            page_size=request.page_size,
        )

    def evidence(self, record_id: str) -> Evidence:
        return evidence_of(self.stream.evidence_tree(record_id))

    def changes(self, record_id: str) -> list[ChangeRow]:
        return [change_row(change) for change in self.stream.changes(record_id)]

    def stats(self, reflecting: bool = False) -> MemoryStats:
        return MemoryStats(
            count=len(self.stream),
            ratings_pending=self.stream.ratings_pending(),
            reflecting=reflecting,
        )

    def core_blocks(self) -> list[CoreBlock]:
        return [
            CoreBlock(label=b.label, description=b.description, value=b.value, limit=b.limit)
            for b in self.core.blocks.values()
        ]

    # Changing

    def add(self, request: AddMemory) -> Changed:
        record = self.stream.add(
            request.text,
            request.kind,
            request.source,
            importance=request.importance,
            pinned=request.pinned,
        )
        by = "" if request.source == "user" else f" (from {request.source})"
        # A near-copy of a recent memory comes back as that memory, seen again just now.
        if record.created_at < record.last_accessed_at:
            text = f"kept already: the memory {quote(record.text)}{by}"
        else:
            text = f"added the memory {quote(record.text)}{by}"
        return Changed(row_of(record), text)

    def edit(self, request: MemoryEdit) -> Changed:
        before = self._require(request.id)
        changes: dict[str, object] = {}
        if request.text is not None and request.text.strip() != before.text:
            changes["text"] = request.text
        if request.importance is not None and request.importance != before.importance:
            changes["importance"] = request.importance
        if request.pinned is not None and request.pinned != before.pinned:
            changes["pinned"] = request.pinned
        if not changes:
            raise MemoryRequestError("nothing changed")
        after = self.stream.edit(request.id, **changes)
        if "text" in changes:
            # The user rewrote what the memory says: it was wrong as kept (docs/MEMORY.md,
            # "Utility"). An importance or a pin is a judgement of worth, not of truth.
            self.stream.adjust_utility([request.id], helped=False)
        return Changed(row_of(after), describe_edit(before, after))

    def delete(self, request: MemoryDelete) -> Changed:
        record = self._require(request.id)
        if record.deleted != request.restore:
            raise MemoryRequestError(
                "that memory is not deleted" if request.restore else "already deleted"
            )
        if request.restore:
            self.stream.restore(request.id)
            text = f"restored the memory {quote(record.text)}"
        else:
            self.stream.delete(request.id)
            # A restore (or an undo of the delete) keeps the loss: the user did judge it once.
            self.stream.adjust_utility([request.id], helped=False)
            text = f"deleted the memory {quote(record.text)}"
        return Changed(row_of(self._require(request.id)), text)

    def undo(self, request: MemoryUndo) -> Changed:
        change = self.stream.undo(request.change_id)
        record = self._require(change.record_id)
        text = f"undid a change ({change.action}): now {quote(record.text)}"
        return Changed(row_of(record), text)

    def set_core(self, label: str, value: str) -> str:
        """Replace a core block's text; the returned line says what changed."""
        before = self.core.blocks.get(label)
        self.core.set(label, value)
        was = quote(before.value) if before is not None and before.value else "empty"
        return f"set the core memory block {label} (it was {was}) to {quote(value.strip())}"

    def _require(self, record_id: str) -> MemoryRecord:
        record = self.stream.get(record_id)
        if record is None:
            raise MemoryRequestError(f"no memory with id {record_id}")
        return record


def describe_edit(before: MemoryRecord, after: MemoryRecord) -> str:
    parts = []
    if before.text != after.text:
        parts.append(f"text {quote(before.text)} → {quote(after.text)}")
    if before.importance != after.importance:
        parts.append(f"importance {before.importance} → {after.importance}")
    if before.pinned != after.pinned:
        parts.append("pinned it" if after.pinned else "unpinned it")
    subject = "" if before.text != after.text else f" {quote(after.text)}"
    return f"edited the memory{subject}: {'; '.join(parts)}"
