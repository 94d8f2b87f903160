"""Archival storage (MemGPT): documents the agent keeps for later, chunked, embedded and searched.

A document is cut on paragraph and sentence boundaries into chunks of about ``CHUNK_CHARS``
characters that overlap by about ``OVERLAP_CHARS`` characters; a word is never split unless it
is longer than a chunk. Each chunk keeps its start offset in the document, so the document is
rebuilt exactly from its chunks. Search is hybrid: vector similarity and the BM25 text score,
each min-max normalised over the candidates (the best ``CANDIDATES`` of each) and averaged.
"""

from __future__ import annotations

import bisect
import logging
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from memory.embedder import Embedder
from memory.locking import WriteLock
from memory.paging import Page, page_bounds
from memory.records import TIMESTAMP, Clock, is_valid_source, utc_now
from memory.scoring import cosine, min_max
from memory.table import Table, in_list, quote
from memory.text import storable_text

log = logging.getLogger(__name__)

CHUNK_CHARS = 800
OVERLAP_CHARS = 100
CANDIDATES = 100

_PARAGRAPH_END = re.compile(r"\S(?=[ \t\r\f\v]*\n\s*\n)")
_SENTENCE_END = re.compile("[.!?\u2026][\"'\u201d\u2019)\\]]*(?=\\s)")
_WORD_END = re.compile(r"\S(?=\s)")
_WORD_START = re.compile(r"(?<=\s)\S")


@dataclass(frozen=True)
class ArchivalHit:
    chunk_id: str
    document_id: str
    title: str | None
    text: str
    score: float


@dataclass(frozen=True)
class ArchivalChunk:
    """A stored piece of a document, as the knowledge graph reads it."""

    id: str
    document_id: str
    title: str | None
    text: str
    created_at: datetime


@dataclass(frozen=True)
class Span:
    """A piece of a text: where it starts and what it says."""

    start: int
    text: str


def archival_schema(dimensions: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("document_id", pa.string(), nullable=False),
            pa.field("chunk_index", pa.int32(), nullable=False),
            pa.field("start", pa.int64(), nullable=False),
            pa.field("title", pa.string(), nullable=True),
            pa.field("source", pa.string(), nullable=False),
            pa.field("created_at", TIMESTAMP, nullable=False),
            pa.field("text", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dimensions), nullable=False),
        ]
    )


# Chunking


class _Boundaries:
    """Where a chunk may end (paragraph, sentence, word ends) and where one may start."""

    def __init__(self, text: str) -> None:
        self.length = len(text)
        self.paragraph_ends = [m.end() for m in _PARAGRAPH_END.finditer(text)]
        self.sentence_ends = [m.end() for m in _SENTENCE_END.finditer(text)]
        self.word_ends = [m.end() for m in _WORD_END.finditer(text)]
        self.word_starts = [m.start() for m in _WORD_START.finditer(text)]

    def chunk_end(self, start: int, size: int) -> int:
        """The best end for a chunk from ``start``: the last paragraph end, else sentence end,
        in its second half; else the last word end; else a hard cut."""
        limit = start + size
        if limit >= self.length:
            return self.length
        for ends, lowest in (
            (self.paragraph_ends, start + size // 2),
            (self.sentence_ends, start + size // 2),
            (self.word_ends, start + 1),
        ):
            end = _last_in(ends, lowest, limit)
            if end is not None:
                return end
        return limit

    def next_start(self, start: int, end: int, overlap: int) -> int:
        """The first word start within ``overlap`` characters before ``end`` (``end`` if none)."""
        index = bisect.bisect_left(self.word_starts, max(end - overlap, start + 1))
        if index < len(self.word_starts) and self.word_starts[index] < end:
            return self.word_starts[index]
        return end


def _last_in(positions: Sequence[int], lowest: int, highest: int) -> int | None:
    """The largest position in [lowest, highest], if any."""
    index = bisect.bisect_right(positions, highest) - 1
    if index >= 0 and positions[index] >= lowest:
        return positions[index]
    return None


def split_into_chunks(
    text: str, size: int = CHUNK_CHARS, overlap: int = OVERLAP_CHARS
) -> list[Span]:
    """Overlapping chunks of at most ``size`` characters covering ``text``."""
    boundaries = _Boundaries(text)
    chunks: list[Span] = []
    start = 0
    while start < len(text):
        end = boundaries.chunk_end(start, size)
        chunks.append(Span(start, text[start:end]))
        if end >= len(text):
            break
        start = boundaries.next_start(start, end, overlap)
    return chunks


def join_chunks(chunks: Sequence[Span]) -> str:
    """The text the chunks were cut from (chunks in order)."""
    pieces: list[str] = []
    length = 0
    for chunk in chunks:
        pieces.append(chunk.text[max(length - chunk.start, 0) :])
        length = max(length, chunk.start + len(chunk.text))
    return "".join(pieces)


# Hybrid search, shared with recall storage


def hybrid_search(
    table: Table,
    embedder: Embedder,
    query: str,
    where: str | None,
    columns: Sequence[str],
    candidates: int = CANDIDATES,
) -> list[tuple[dict[str, Any], float]]:
    """Rows ranked best first by the mean of min-max normalised cosine similarity and BM25
    score, over the best ``candidates`` rows of each search. ``columns`` must include "id"."""
    vector = embedder.embed([query])[0]
    wanted = [*columns, "vector"]
    by_vector = table.vector_search(vector.tolist(), candidates, where, wanted)
    rows = {row["id"]: row for row in by_vector.to_pylist()}
    text_scores = _text_scores(table, query, candidates, where, wanted, rows)
    if not rows:
        return []
    ids = list(rows)
    vectors = np.array([rows[i]["vector"] for i in ids], dtype=np.float32)
    lexical = np.array([text_scores.get(i, 0.0) for i in ids], dtype=np.float64)
    scores = (min_max(cosine(vector, vectors)) + min_max(lexical)) / 2
    order = np.argsort(-scores, kind="stable")
    return [(_without_vector(rows[ids[i]]), float(scores[i])) for i in order]


def _text_scores(
    table: Table,
    query: str,
    candidates: int,
    where: str | None,
    columns: Sequence[str],
    rows: dict[str, dict[str, Any]],
) -> dict[str, float]:
    """BM25 scores by id; rows found only by text are added to ``rows``."""
    try:
        found = table.text_search(query, candidates, where, columns).to_pylist()
    except Exception as error:  # a query the FTS parser rejects still gets vector hits
        log.warning("text search failed for %r: %s", query[:80], error)
        return {}
    for row in found:
        rows.setdefault(row["id"], row)
    return {row["id"]: float(row["_score"]) for row in found}


def _without_vector(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in ("vector", "_distance", "_score")}


# The store


class ArchivalStore:
    def __init__(
        self, database: Any, lock: WriteLock, embedder: Embedder, clock: Clock = utc_now
    ) -> None:
        self._embedder = embedder
        self._clock = clock
        self.table = Table(database, "archival", archival_schema(embedder.dimensions), lock)
        self.table.ensure_indices()
        # Text search without an index would not drop stop words or stem: index the first rows.
        self._indexed = self.table.count() > 0

    def insert(self, text: str, source: str = "user", title: str | None = None) -> list[str]:
        """Chunk, embed and store a document; returns its chunk ids (committed on return)."""
        text = storable_text(text)
        if not text:
            raise ValueError("an archival document needs some text (it was empty or blank)")
        if not is_valid_source(source):
            raise ValueError(f"unknown source {source!r}")
        chunks = split_into_chunks(text)
        vectors = self._embedder.embed([chunk.text for chunk in chunks])
        rows = self._rows(chunks, vectors, source, storable_text(title or "") or None)
        self.table.add(rows)
        if not self._indexed:
            self.table.ensure_indices()
            self._indexed = True
        return [row["id"] for row in rows]

    def replace_document(self, title: str, text: str, source: str) -> list[str]:
        """Store ``text`` as the document titled ``title`` (a file's path), dropping any
        earlier version of it once the new one is stored: a file read again is not kept twice."""
        ids = self.insert(text, source, title)
        document_id = ids[0].split(":", 1)[0]
        where = f"title = {quote(storable_text(title))} AND document_id != {quote(document_id)}"
        if self.table.count(where):
            self.table.write(lambda table: table.delete(where))
        return ids

    def _rows(
        self,
        chunks: Sequence[Span],
        vectors: NDArray[np.float32],
        source: str,
        title: str | None,
    ) -> list[dict[str, Any]]:
        document_id = uuid.uuid4().hex
        now = self._clock()
        return [
            {
                "id": f"{document_id}:{index}",
                "document_id": document_id,
                "chunk_index": index,
                "start": chunk.start,
                "title": title,
                "source": source,
                "created_at": now,
                "text": chunk.text,
                "vector": vector.tolist(),
            }
            for index, (chunk, vector) in enumerate(zip(chunks, vectors, strict=True))
        ]

    def search(self, query: str, page: int = 1, page_size: int = 10) -> Page[ArchivalHit]:
        """Chunks ranked by hybrid relevance to ``query``, one page of them."""
        offset, limit = page_bounds(page, page_size)
        query = storable_text(query)
        if not query:
            raise ValueError("an archival search needs a query")
        columns = ["id", "document_id", "title", "text"]
        ranked = hybrid_search(self.table, self._embedder, query, None, columns)
        hits = tuple(
            ArchivalHit(row["id"], row["document_id"], row["title"], row["text"], score)
            for row, score in ranked[offset : offset + limit]
        )
        return Page(hits, len(ranked), page, page_size)

    def list_chunks(self, page: int = 1, page_size: int = 200) -> Page[ArchivalChunk]:
        """Every stored chunk, the newest document first and each document in order, a page
        at a time."""
        offset, limit = page_bounds(page, page_size)
        order = self.table.query(columns=["id", "created_at", "document_id", "chunk_index"])
        rows = sorted(
            order.to_pylist(),
            key=lambda row: (
                -row["created_at"].timestamp(),
                row["document_id"],
                row["chunk_index"],
            ),
        )
        wanted = [row["id"] for row in rows[offset : offset + limit]]
        return Page(tuple(self.get_chunks(wanted)), len(rows), page, page_size)

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[ArchivalChunk]:
        """The chunks in the order asked (unknown ids left out)."""
        if not chunk_ids:
            return []
        columns = ["id", "document_id", "title", "text", "created_at"]
        rows = self.table.query(in_list("id", chunk_ids), columns, limit=len(chunk_ids))
        by_id = {row["id"]: ArchivalChunk(**row) for row in rows.to_pylist()}
        return [by_id[i] for i in chunk_ids if i in by_id]

    def get_document(self, document_id: str) -> str:
        """The document as inserted (after cleaning), rebuilt from its chunks."""
        columns = ["chunk_index", "start", "text"]
        rows = self.table.query(_document(document_id), columns).to_pylist()
        if not rows:
            raise _unknown(document_id)
        rows.sort(key=lambda row: row["chunk_index"])
        return join_chunks([Span(row["start"], row["text"]) for row in rows])

    def delete_document(self, document_id: str) -> None:
        """Remove every chunk of the document."""
        where = _document(document_id)
        if not self.table.count(where):
            raise _unknown(document_id)
        self.table.write(lambda table: table.delete(where))

    def count(self) -> int:
        """The number of stored chunks."""
        return self.table.count()


def _document(document_id: str) -> str:
    return f"document_id = {quote(document_id)}"


def _unknown(document_id: str) -> LookupError:
    return LookupError(f"no archival document with id {document_id}")
