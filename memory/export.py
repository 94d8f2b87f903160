"""Exporting and importing the memory: a lossless JSON Lines file and an Obsidian vault.

The JSON Lines file starts with a header line, then holds one record per line with every field
(embeddings too, unless left out); importing it restores the same memory: ids, times, ratings
and vectors as they were. Both exports read the table a page at a time, in creation order.

The Markdown export is for reading: one note per record, its fields as YAML front matter, links
to the notes it cites, an index note (``Memory.md``) and the ``.obsidian/`` folder that makes
the folder open as an Obsidian vault.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import fields
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO, get_args

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from memory.files import atomic_file
from memory.graph.export import write_entity_notes
from memory.graph.store import GraphStore
from memory.records import KINDS, ImportanceState, MemoryRecord, is_valid_source, utc_now
from memory.stream import MemoryStream
from memory.table import in_list
from memory.vault.notes import json_value, note_name, render_note

FORMAT = "brain-os-memory"
VERSION = 1
# Records read from the table at a time, and restored per write on import.
PAGE_SIZE = 1_000
IMPORT_BATCH = 2_000
# The header line is padded to this width, so its count can be written once the records are.
HEADER_WIDTH = 200
INDEX_NOTE = "Memory"

Parser = Callable[[Any], Any]


# Reading the table a page at a time


def _dimensions(stream: MemoryStream) -> int:
    vector_type = stream.records.schema.field("vector").type
    return int(vector_type.list_size)


def _columns(stream: MemoryStream, with_vectors: bool) -> list[str]:
    return [name for name in stream.records.schema.names if with_vectors or name != "vector"]


def _ordered_ids(stream: MemoryStream, where: str | None) -> pa.ChunkedArray:
    """The ids of the records to export, oldest first: a snapshot that later pages follow."""
    keys = stream.records.query(where=where, columns=["id", "created_at"])
    order = pc.sort_indices(keys, sort_keys=[("created_at", "ascending"), ("id", "ascending")])
    ids: pa.ChunkedArray = keys.column("id").take(order)
    return ids


def _pages(
    stream: MemoryStream, ids: pa.ChunkedArray, columns: Sequence[str]
) -> Iterator[pa.Table]:
    """The rows of ``ids`` in that order, PAGE_SIZE at a time (rows gone since are skipped)."""
    for start in range(0, len(ids), PAGE_SIZE):
        wanted = ids.slice(start, PAGE_SIZE)
        found = stream.records.query(
            where=in_list("id", wanted.to_pylist()), columns=columns, limit=len(wanted)
        )
        positions = pc.index_in(wanted, value_set=found.column("id").combine_chunks())
        yield found.take(positions.drop_null())


def _records(
    stream: MemoryStream, ids: pa.ChunkedArray, with_vectors: bool
) -> Iterator[MemoryRecord]:
    for page in _pages(stream, ids, _columns(stream, with_vectors)):
        for row in page.to_pylist():
            yield MemoryRecord.from_row(row)


# JSON Lines export


def export_jsonl(
    stream: MemoryStream,
    path: Path | str,
    include_embeddings: bool = True,
    include_deleted: bool = True,
) -> int:
    """Write every record (deleted ones too, unless ``include_deleted`` is false) to ``path``
    as JSON Lines, atomically; returns how many records were written."""
    ids = _ordered_ids(stream, None if include_deleted else "deleted = false")
    dimensions = _dimensions(stream)
    header = {
        "format": FORMAT,
        "version": VERSION,
        "count": 0,
        "dimensions": dimensions,
        "embeddings": include_embeddings,
        "exported_at": utc_now().isoformat(),
    }
    written = 0
    with atomic_file(Path(path)) as handle:
        _write_header(handle, header)
        vector_format = _vector_format(dimensions)
        for record in _records(stream, ids, include_embeddings):
            handle.write(_record_line(record, vector_format) + "\n")
            written += 1
        handle.seek(0)
        _write_header(handle, {**header, "count": written})
    return written


def _write_header(handle: TextIO, header: dict[str, Any]) -> None:
    handle.write(json.dumps(header).ljust(HEADER_WIDTH) + "\n")


def _vector_format(dimensions: int) -> str:
    """A %-format for a whole embedding as a JSON list. Nine significant digits read back to
    the very same float32 (through float64 too); the exponent form keeps -0.0 a float."""
    return "[" + ",".join(["%.8e"] * dimensions) + "]"


def _record_line(record: MemoryRecord, vector_format: str) -> str:
    """The record as one JSON object: every field, the embedding last (null when left out)."""
    values = {
        field.name: json_value(getattr(record, field.name))
        for field in fields(record)
        if field.name != "embedding"
    }
    vector = record.embedding
    if vector is not None and not np.isfinite(vector).all():
        raise ValueError(f"record {record.id}: its embedding holds a value that is not finite")
    vector_text = "null" if vector is None else vector_format % tuple(vector.tolist())
    return f'{json.dumps(values, allow_nan=False)[:-1]}, "embedding": {vector_text}}}'


# JSON Lines import


def import_jsonl(stream: MemoryStream, path: Path | str) -> int:
    """Restore the records of a file written by :func:`export_jsonl`, exactly as they were
    (records already here with the same id are replaced; those exported without an embedding
    are embedded again). The whole file is checked before anything is written: a malformed
    line raises ``ValueError`` naming it. Returns how many records were imported."""
    path = Path(path)
    dimensions = _dimensions(stream)
    total = _check_file(path, dimensions)
    for batch in _batched(_read_records(path, dimensions), IMPORT_BATCH):
        stream.restore_records(batch)
    stream.records.ensure_indices()
    return total


def _check_file(path: Path, dimensions: int) -> int:
    """Read the whole file once, refusing it at the first bad line or a repeated id."""
    seen: set[str] = set()
    for number, record in _numbered_records(path, dimensions):
        if record.id in seen:
            raise ValueError(f"{path} line {number}: id {record.id!r} appears twice")
        seen.add(record.id)
    return len(seen)


def _read_records(path: Path, dimensions: int) -> Iterator[MemoryRecord]:
    return (record for _, record in _numbered_records(path, dimensions))


def _numbered_records(path: Path, dimensions: int) -> Iterator[tuple[int, MemoryRecord]]:
    lines = _lines(path)
    first = next(lines, None)
    if first is None:
        raise ValueError(f"{path} is empty, not a Brain OS memory export")
    expected, embedded = _read_header(path, first, dimensions)
    found = 0
    for number, line in lines:
        try:
            record = _parse_record(json.loads(line), dimensions if embedded else None)
        except ValueError as error:
            raise ValueError(f"{path} line {number}: {error}") from None
        found += 1
        yield number, record
    if found != expected:
        raise ValueError(f"{path}: the header promises {expected} records, the file holds {found}")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """The non-blank lines of the file with their numbers (from 1)."""
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError(f"{path} line {number}: not UTF-8 text") from None
            if line.strip():
                yield number, line


def _read_header(path: Path, first: tuple[int, str], dimensions: int) -> tuple[int, bool]:
    """The record count the header promises, and whether records carry embeddings."""
    number, line = first
    try:
        header = json.loads(line)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise ValueError(f"{path} line {number}: not a Brain OS memory export (no header)")
    if header.get("version") != VERSION:
        raise ValueError(
            f"{path}: export format version {header.get('version')!r} is not supported "
            f"(this version reads {VERSION})"
        )
    records = header.get("count")
    embedded = header.get("embeddings")
    if (
        isinstance(records, bool)
        or not isinstance(records, int)
        or records < 0
        or not isinstance(embedded, bool)
    ):
        raise ValueError(f"{path} line {number}: the header needs a count and an embeddings flag")
    if embedded and header.get("dimensions") != dimensions:
        raise ValueError(
            f"{path}: its embeddings have {header.get('dimensions')!r} dimensions, this memory "
            f"uses {dimensions}; export again without embeddings to have them recomputed"
        )
    return records, embedded


def _batched(items: Iterable[MemoryRecord], size: int) -> Iterator[list[MemoryRecord]]:
    batch: list[MemoryRecord] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


# Checking one record


def _string(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, not {value!r}")
    return value


def _identifier(value: object) -> str:
    text = _string(value)
    if not text:
        raise ValueError("an id cannot be empty")
    return text


def _choice(options: Sequence[str]) -> Parser:
    def parse(value: object) -> str:
        if value not in options:
            raise ValueError(f"{value!r} is not one of {', '.join(options)}")
        return str(value)

    return parse


def _moment(value: object) -> datetime:
    moment = datetime.fromisoformat(_string(value))
    if moment.tzinfo is None:
        raise ValueError(f"{value!r} has no UTC offset")
    return moment


def _optional(parser: Parser) -> Parser:
    def parse(value: object) -> Any:
        return None if value is None else parser(value)

    return parse


def _importance(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10:
        raise ValueError(f"importance must be a whole number 1-10, not {value!r}")
    return value


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, not {value!r}")
    return value


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"expected a finite number, not {value!r}")
    return float(value)


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ValueError(f"expected a list of strings, not {value!r}")
    return tuple(_string(item) for item in value)


def _sources(value: object) -> tuple[str, ...]:
    sources = _strings(value)
    for source in sources:
        if not is_valid_source(source):
            raise ValueError(f"unknown source {source!r}")
    return sources


FIELDS: dict[str, Parser] = {
    "id": _identifier,
    "text": _string,
    "kind": _choice(KINDS),
    "created_at": _moment,
    "last_accessed_at": _moment,
    "importance": _importance,
    "sources": _sources,
    "event_time": _optional(_moment),
    "importance_state": _choice(get_args(ImportanceState)),
    "evidence": _strings,
    "pinned": _flag,
    "utility": _number,
    "deleted": _flag,
    "updated_at": _optional(_moment),
}


def _parse_record(data: object, dimensions: int | None) -> MemoryRecord:
    """One record from a line's JSON; ``dimensions`` is None when the file has no embeddings."""
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    _check_names(set(data))
    values = {name: _field(name, parser, data[name]) for name, parser in FIELDS.items()}
    return MemoryRecord(**values, embedding=_embedding(data["embedding"], dimensions))


def _check_names(names: set[str]) -> None:
    expected = {*FIELDS, "embedding"}
    problems = []
    if expected - names:
        problems.append(f"missing fields: {', '.join(sorted(expected - names))}")
    if names - expected:
        problems.append(f"unknown fields: {', '.join(sorted(names - expected))}")
    if problems:
        raise ValueError("; ".join(problems))


def _field(name: str, parser: Parser, value: object) -> Any:
    try:
        return parser(value)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None


def _embedding(value: object, dimensions: int | None) -> NDArray[np.float32] | None:
    """None (to be embedded on import) or the exact float32 vector."""
    if value is None:
        return None
    if dimensions is None:
        raise ValueError("embedding: the header says the export has no embeddings")
    problem = f"embedding: expected a list of {dimensions} finite numbers"
    if not isinstance(value, list) or len(value) != dimensions:
        raise ValueError(problem)
    try:
        array = np.array(value)
    except ValueError:
        raise ValueError(problem) from None
    if array.shape != (dimensions,) or array.dtype.kind not in "if" or not np.isfinite(array).all():
        raise ValueError(problem)
    return array.astype(np.float32)


# Markdown export (an Obsidian vault)


def export_markdown(
    stream: MemoryStream, folder: Path | str, graph: GraphStore | None = None
) -> int:
    """Write one note per record into ``folder`` (new or empty), with ``Memory.md`` indexing
    them by kind, so that the folder opens as an Obsidian vault; returns how many notes.
    Deleted records are written too (``deleted: true``, indexed apart), so links to them hold.
    With ``graph``, each of its entities gets a note in ``Entities/`` (its facts, linked along
    their relations and to the memory notes behind them), indexed too."""
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ValueError(f"{folder} is not an empty folder; export into a new one")
    ids = _ordered_ids(stream, None)
    names = _note_names(stream, ids)
    with _atomic_folder(folder) as building:
        (building / ".obsidian").mkdir()
        index: dict[str, list[str]] = {}
        for record in _records(stream, ids, with_vectors=False):
            name = names[record.id]
            (building / f"{name}.md").write_text(
                render_note(record, names), encoding="utf-8", errors="replace"
            )
            index.setdefault("deleted" if record.deleted else record.kind, []).append(name)
        if graph is not None:
            index["entities"] = write_entity_notes(graph, building, names)
        written = sum(len(group) for group in index.values())
        (building / f"{INDEX_NOTE}.md").write_text(_index_note(index, written), "utf-8")
    return written


def _note_names(stream: MemoryStream, ids: pa.ChunkedArray) -> dict[str, str]:
    """A unique note name per record id (memory/vault/notes.py). Only these names are held in
    memory, not the records."""
    names: dict[str, str] = {}
    taken: set[str] = set()
    for page in _pages(stream, ids, ["id", "created_at", "text"]):
        for row in page.to_pylist():
            name = note_name(row["id"], row["created_at"], row["text"], taken)
            taken.add(name)
            names[row["id"]] = name
    return names


@contextmanager
def _atomic_folder(folder: Path) -> Iterator[Path]:
    """A folder built beside ``folder`` and renamed into place when complete."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    try:
        yield building
        if folder.exists():
            folder.rmdir()
        building.rename(folder)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise


def _index_note(index: dict[str, list[str]], total: int) -> str:
    lines = [f"# {INDEX_NOTE}", "", f"{total} notes, exported {utc_now():%Y-%m-%d %H:%M} UTC.", ""]
    for group in (*KINDS, "deleted", "entities"):
        names = index.get(group, [])
        if names:
            lines += [f"## {group.capitalize()} ({len(names)})", ""]
            lines += [f"- [[{name}]]" for name in names]
            lines.append("")
    return "\n".join(lines)
