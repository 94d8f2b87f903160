"""Recall storage (MemGPT): every conversation message, in order, searchable by text and date.

Each message gets a sequence number, one higher than the last, assigned and committed under the
write lock so that concurrent appends never share or skip one. The next number is read from the
table when the store opens; the store's process is the only writer of the table. Huge messages
are stored whole; only their first ``MAX_EMBED_CHARS`` characters are embedded.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memory.archival import hybrid_search
from memory.database import DatabaseError
from memory.embedder import Embedder
from memory.locking import LockTimeout, WriteLock
from memory.paging import Page, page_bounds
from memory.records import TIMESTAMP, Clock, _aware, utc_now
from memory.table import Table, in_list
from memory.text import MAX_EMBED_CHARS, storable_text

ROLES = ("system", "user", "assistant", "tool")
COLUMNS = ["id", "seq", "role", "text", "conversation_id", "at"]


@dataclass(frozen=True)
class RecallMessage:
    id: str
    seq: int
    role: str
    text: str
    conversation_id: str
    at: datetime

    @staticmethod
    def from_row(row: dict[str, Any]) -> RecallMessage:
        return RecallMessage(
            id=row["id"],
            seq=int(row["seq"]),
            role=row["role"],
            text=row["text"],
            conversation_id=row["conversation_id"],
            at=_aware(row["at"]),
        )


def recall_schema(dimensions: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("seq", pa.int64(), nullable=False),
            pa.field("role", pa.string(), nullable=False),
            pa.field("text", pa.string(), nullable=False),
            pa.field("conversation_id", pa.string(), nullable=False),
            pa.field("at", TIMESTAMP, nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dimensions), nullable=False),
        ]
    )


class RecallStore:
    def __init__(
        self, database: Any, lock: WriteLock, embedder: Embedder, clock: Clock = utc_now
    ) -> None:
        self._embedder = embedder
        self._clock = clock
        self._lock = lock
        self.table = Table(database, "messages", recall_schema(embedder.dimensions), lock)
        self.table.ensure_indices()
        with self._locked():
            self._next_seq = self._last_seq() + 1
        # Text search without an index would not drop stop words or stem: index the first rows.
        self._indexed = self._next_seq > 1

    def _last_seq(self) -> int:
        seqs = self.table.query(columns=["seq"]).column("seq")
        return int(pc.max(seqs).as_py() or 0)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        try:
            with self._lock.hold():
                yield
        except LockTimeout as error:
            raise DatabaseError(f"the memory database is locked: {error}") from None

    def append(
        self, role: str, text: str, conversation_id: str = "main", at: datetime | None = None
    ) -> RecallMessage:
        """Store a message with the next sequence number; committed when this returns."""
        text = storable_text(text)
        if not text:
            raise ValueError("a message needs some text (it was empty or blank)")
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}; one of {', '.join(ROLES)}")
        vector = self._embedder.embed([text[:MAX_EMBED_CHARS]])[0].tolist()
        with self._locked():
            message = RecallMessage(
                id=uuid.uuid4().hex,
                seq=self._next_seq,
                role=role,
                text=text,
                conversation_id=conversation_id,
                at=_utc(at if at is not None else self._clock()),
            )
            self.table.add([{**asdict(message), "vector": vector}])
            self._next_seq += 1
            if not self._indexed:
                self.table.ensure_indices()
                self._indexed = True
        return message

    def search(
        self,
        query: str,
        page: int = 1,
        page_size: int = 10,
        since: datetime | None = None,
        until: datetime | None = None,
        roles: tuple[str, ...] | None = None,
    ) -> Page[RecallMessage]:
        """Messages ranked by text (BM25) and meaning (embedding) together; with an empty query,
        the messages in the range in order."""
        where = _where(since, until, roles)
        query = storable_text(query)
        if not query:
            return self._in_order(where, page, page_size)
        offset, limit = page_bounds(page, page_size)
        ranked = hybrid_search(self.table, self._embedder, query, where, COLUMNS)
        found = tuple(RecallMessage.from_row(row) for row, _ in ranked[offset : offset + limit])
        return Page(found, len(ranked), page, page_size)

    def by_date(
        self,
        since: datetime | None = None,
        until: datetime | None = None,
        page: int = 1,
        page_size: int = 10,
    ) -> Page[RecallMessage]:
        """Messages from ``since`` to ``until`` (both included), oldest first."""
        return self._in_order(_where(since, until, None), page, page_size)

    def recent(self, n: int) -> list[RecallMessage]:
        """The last ``n`` messages, oldest first."""
        if n < 1:
            return []
        return self._by_seq(list(range(max(self._next_seq - n, 1), self._next_seq)))

    def count(self) -> int:
        return self.table.count()

    def _in_order(self, where: str | None, page: int, page_size: int) -> Page[RecallMessage]:
        """One page of the matching messages sorted by time, then sequence."""
        offset, limit = page_bounds(page, page_size)
        keys = self.table.query(where, ["seq", "at"])
        seqs = keys.column("seq").to_numpy()
        times = keys.column("at").cast(pa.int64()).to_numpy()
        order = np.lexsort((seqs, times))[offset : offset + limit]
        found = self._by_seq([int(seqs[i]) for i in order])
        return Page(tuple(found), keys.num_rows, page, page_size)

    def _by_seq(self, seqs: Sequence[int]) -> list[RecallMessage]:
        """The messages with these sequence numbers, in the order given."""
        if not seqs:
            return []
        where = f"seq IN ({', '.join(str(seq) for seq in seqs)})"
        # No limit of len(seqs): a sequence number written twice (by two processes before
        # the service owned the folder) would push a wanted row out.
        rows = self.table.query(where, COLUMNS).to_pylist()
        by_seq = {row["seq"]: RecallMessage.from_row(row) for row in rows}
        return [by_seq[seq] for seq in seqs if seq in by_seq]


def _where(
    since: datetime | None, until: datetime | None, roles: Sequence[str] | None
) -> str | None:
    clauses = []
    if since is not None:
        clauses.append(f"at >= {_timestamp(since)}")
    if until is not None:
        clauses.append(f"at <= {_timestamp(until)}")
    if roles:
        clauses.append(in_list("role", roles))
    return " AND ".join(clauses) or None


def _timestamp(moment: datetime) -> str:
    return f"TIMESTAMP '{_utc(moment).isoformat()}'"


def _utc(moment: datetime) -> datetime:
    """An aware UTC time; a naive one is taken to be UTC."""
    return _aware(moment).astimezone(UTC)
