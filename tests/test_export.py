"""Export and import of the memory (JSON Lines, Obsidian vault) on real LanceDB with the real
embedder."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory import export
from memory.embedder import OnnxSentenceEmbedder
from memory.export import export_jsonl, export_markdown, import_jsonl
from memory.records import KINDS, MemoryRecord
from memory.stream import Filters, MemoryConfig, MemoryStream, ScoredMemory
from tests.memory_helpers import START, Clock, open_stream

RECORDS = 9
NOTE_NAME = re.compile(r"\d{4}-\d{2}-\d{2} [a-z0-9]+(-[a-z0-9]+)* [a-z0-9]+(-\d+)?")
WIKILINK = re.compile(r"\[\[([^\]]+)\]\]")
QUERIES = ("Where does my sister live?", "café in Zürich", "family")


@dataclass(frozen=True)
class Exported:
    stream: MemoryStream
    data: Path
    clock: Clock
    records: list[MemoryRecord]
    full: Path
    bare: Path


def fill(stream: MemoryStream, clock: Clock) -> None:
    """Every kind, pinned and deleted records, a reflection citing a reflection citing an
    observation, event times set and unset, unicode, emoji, several lines, each importance state,
    two sources and a utility."""
    anna = stream.add("My sister Anna lives in Lugano 🇨🇭.", importance=6)
    clock.advance(hours=1)
    stream.add("My sister Anna lives in Lugano 🇨🇭.", source="import")
    shopping = stream.add(
        "Shopping list:\n- milk\n- eggs\n\n\"quoted\", 'single' & <b>tags</b> #hash [[not a link]]",
        source="assistant",
    )
    clock.advance(days=1)
    cafe = stream.add(
        "Zoë's café in Zürich — 日本語のテキスト 😀",
        kind="fact",
        source="tool",
        pinned=True,
        importance=4,
    )
    stream.add(
        "Dentist appointment with Dr. Souza",
        kind="plan",
        source="subagent:planner",
        event_time=START + timedelta(days=3, hours=2),
    )
    stream.add("key: value\n---\n# not front matter\n\ttabbed \\ backslash", importance=2)
    party = stream.add("🎉🎉🎉", importance=9)
    clock.advance(hours=5)
    insight = stream.add(
        "Anna and the café are both on my mind lately.",
        kind="reflection",
        evidence=[anna.id, cafe.id],
        importance=7,
    )
    stream.add(
        "I keep thinking about family and about travelling.",
        kind="reflection",
        evidence=[insight.id, shopping.id],
    )
    old = stream.add("A summary of last month that is out of date.", kind="summary", importance=1)
    stream.delete(old.id)
    stream.adjust_utility([insight.id], helped=True)
    rated = [stream.get(shopping.id), stream.get(party.id)]
    assert rated[0] is not None and rated[1] is not None
    stream.restore_records(
        [
            rated[0].with_changes(importance=5, importance_state="rated"),
            rated[1].with_changes(importance=3, importance_state="fallback"),
        ]
    )


def all_records(stream: MemoryStream) -> list[MemoryRecord]:
    ids = stream.records.query(columns=["id"]).column("id").to_pylist()
    return sorted(stream.get_many(ids), key=lambda record: record.id)


def vector(record: MemoryRecord) -> np.ndarray[Any, np.dtype[np.float32]]:
    assert record.embedding is not None
    return record.embedding


@pytest.fixture(scope="module")
def exported(
    tmp_path_factory: pytest.TempPathFactory, embedder: OnnxSentenceEmbedder
) -> Iterator[Exported]:
    """A varied memory, exported (a few records per page) with and without embeddings."""
    folder = tmp_path_factory.mktemp("export")
    clock = Clock()
    stream = open_stream(folder / "data", embedder, clock=clock)
    fill(stream, clock)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(export, "PAGE_SIZE", 3)
        full, bare = folder / "out" / "memory.jsonl", folder / "out" / "bare.jsonl"
        assert export_jsonl(stream, full) == RECORDS
        assert export_jsonl(stream, bare, include_embeddings=False) == RECORDS
    yield Exported(stream, folder / "data", clock, all_records(stream), full, bare)
    stream.close()


@pytest.fixture
def fresh(tmp_path: Path, exported: Exported, embedder: OnnxSentenceEmbedder) -> MemoryStream:
    """An empty memory in a new data folder, on the same clock."""
    return open_stream(tmp_path / "fresh", embedder, clock=exported.clock)


def test_the_memory_is_varied(exported: Exported) -> None:
    records = exported.records
    assert len(records) == RECORDS
    assert {r.kind for r in records} == {"observation", "reflection", "plan", "fact", "summary"}
    assert {r.importance_state for r in records} == {"given", "pending", "rated", "fallback"}
    assert any(r.pinned for r in records) and any(r.deleted for r in records)
    assert any(r.event_time for r in records) and any(r.event_time is None for r in records)
    assert any(len(r.sources) == 2 for r in records) and any(r.utility for r in records)


# JSON Lines


def test_the_file_has_a_header_then_one_record_per_line(exported: Exported) -> None:
    header, *lines = exported.full.read_text(encoding="utf-8").splitlines()
    meta = json.loads(header)
    assert meta.pop("exported_at")
    assert meta == {
        "format": "brain-os-memory",
        "version": 1,
        "count": RECORDS,
        "dimensions": 384,
        "embeddings": True,
    }
    rows = [json.loads(line) for line in lines]
    assert len(rows) == RECORDS
    assert all(set(row) == {f.name for f in fields(MemoryRecord)} for row in rows)
    created = [datetime.fromisoformat(row["created_at"]) for row in rows]
    assert created == sorted(created) and all(moment.utcoffset() is not None for moment in created)
    assert sorted(p.name for p in exported.full.parent.iterdir()) == ["bare.jsonl", "memory.jsonl"]


def test_round_trip_into_a_new_folder_gives_an_identical_memory(
    exported: Exported,
    fresh: MemoryStream,
    embedder: OnnxSentenceEmbedder,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(export, "IMPORT_BATCH", 4)
    assert import_jsonl(fresh, exported.full) == RECORDS
    restored = all_records(fresh)
    assert restored == exported.records
    for before, after in zip(exported.records, restored, strict=True):
        assert vector(after).dtype == np.float32
        assert np.array_equal(vector(before), vector(after))
    assert len(fresh) == len(exported.stream) == RECORDS - 1
    # The default relevance ranks the same; its scores differ a little, because word statistics
    # in the full-text index reflect a table's history (rows since rewritten) and neighbours
    # follow the order rows were written in. Vector relevance gives the very same scores.
    assert_same_retrieval(exported.stream, fresh, exact=False)
    cosine = MemoryConfig(relevance="cosine")
    assert_same_retrieval(
        open_stream(exported.data, embedder, clock=exported.clock, config=cosine),
        open_stream(tmp_path / "fresh", embedder, clock=exported.clock, config=cosine),
        exact=True,
    )


def assert_same_retrieval(expected: MemoryStream, found: MemoryStream, exact: bool) -> None:
    for query in QUERIES:
        for filters in (None, Filters(kinds=("reflection", "fact"))):
            wanted = expected.retrieve(query, k=5, filters=filters, touch=False)
            got = found.retrieve(query, k=5, filters=filters, touch=False)
            # Records with equal scores may come in either order (and be cut either way at k).
            assert ranked(got) == ranked(wanted)
            if exact:
                # Bit-equal vectors; float32 arithmetic in another order may differ by ~1e-7.
                wanted_scores = [s.score for s in wanted]
                assert [s.score for s in got] == pytest.approx(wanted_scores, rel=1e-5)


def ranked(found: list[ScoredMemory]) -> list[object]:
    """The records in score order, tied ones as one set, the last tie group left out."""
    groups: dict[float, set[MemoryRecord]] = {}
    for scored in found:
        groups.setdefault(round(scored.score, 4), set()).add(scored.record)
    ordered = [frozenset(groups[score]) for score in sorted(groups, reverse=True)]
    return ordered[:-1]


def test_every_float32_survives_the_round_trip_bit_for_bit(
    exported: Exported, fresh: MemoryStream, tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    rng = np.random.default_rng(7)
    bits = rng.integers(0, 2**32, size=50 * 384, dtype=np.uint64).astype(np.uint32)
    values = bits.view(np.float32)
    values = values[np.isfinite(values)][: 40 * 384]
    special = np.array([-0.0, 0.0, 1.0, -1.0, 1e-45, -1e-45, 3.4028235e38, 1.1754944e-38])
    values[: special.size] = special.astype(np.float32)
    template = exported.records[0]
    records = [
        template.with_changes(id=f"r{i}", evidence=(), embedding=vector)
        for i, vector in enumerate(values.reshape(40, 384))
    ]
    fresh.restore_records(records)
    path = tmp_path / "bits.jsonl"
    assert export_jsonl(fresh, path) == 40
    copy = open_stream(tmp_path / "copy", embedder, clock=exported.clock)
    assert import_jsonl(copy, path) == 40
    for record in records:
        restored = copy.get(record.id)
        assert restored is not None
        assert np.array_equal(vector(restored).view(np.uint32), vector(record).view(np.uint32))


def test_deleted_records_can_be_left_out(exported: Exported, tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    assert export_jsonl(exported.stream, path, include_deleted=False) == RECORDS - 1
    assert not any(json.loads(line).get("deleted") for line in path.read_text().splitlines())


def test_records_exported_without_embeddings_are_embedded_again(
    exported: Exported, fresh: MemoryStream
) -> None:
    lines = exported.bare.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0])["embeddings"] is False
    assert all(json.loads(line)["embedding"] is None for line in lines[1:])
    assert import_jsonl(fresh, exported.bare) == RECORDS
    restored = all_records(fresh)
    assert restored == exported.records
    for before, after in zip(exported.records, restored, strict=True):
        cosine = float(np.dot(vector(before), vector(after)))
        assert cosine > 0.999


def test_importing_the_same_file_twice_changes_nothing(
    exported: Exported, fresh: MemoryStream
) -> None:
    assert import_jsonl(fresh, exported.full) == RECORDS
    assert import_jsonl(fresh, exported.full) == RECORDS
    assert fresh.records.count() == RECORDS and len(fresh) == RECORDS - 1
    assert all_records(fresh) == exported.records


Edit = Callable[[list[str]], None]


def set_field(line: int, name: str, value: Any) -> Edit:
    def edit(lines: list[str]) -> None:
        row = json.loads(lines[line - 1])
        row[name] = value
        lines[line - 1] = json.dumps(row)

    return edit


def drop_field(line: int, name: str) -> Edit:
    def edit(lines: list[str]) -> None:
        row = json.loads(lines[line - 1])
        del row[name]
        lines[line - 1] = json.dumps(row)

    return edit


def replace_line(line: int, text: str) -> Edit:
    def edit(lines: list[str]) -> None:
        lines[line - 1] = text

    return edit


def copy_id(source: int, target: int) -> Edit:
    def edit(lines: list[str]) -> None:
        set_field(target, "id", json.loads(lines[source - 1])["id"])(lines)

    return edit


MALFORMED: dict[str, tuple[Edit, str]] = {
    "not json": (replace_line(3, "{not json"), "line 3: Expecting"),
    "not an object": (replace_line(4, "[1, 2]"), "line 4: expected a JSON object"),
    "unknown kind": (set_field(4, "kind", "dream"), "line 4: kind: 'dream' is not one of"),
    "naive time": (set_field(2, "created_at", "2026-11-21T12:00:00"), "line 2: created_at: .*"),
    "bad time": (set_field(5, "event_time", "next tuesday"), "line 5: event_time: Invalid"),
    "importance": (set_field(6, "importance", 11), "line 6: importance: .*1-10"),
    "flag": (set_field(2, "pinned", "yes"), "line 2: pinned: expected true or false"),
    "utility": (set_field(7, "utility", "high"), "line 7: utility: expected a finite number"),
    "source": (set_field(3, "sources", ["someone"]), "line 3: sources: unknown source"),
    "evidence": (set_field(9, "evidence", "abc"), "line 9: evidence: expected a list"),
    "short vector": (set_field(5, "embedding", [0.5] * 383), "line 5: embedding: .*384"),
    "vector of text": (set_field(5, "embedding", ["a"] * 384), "line 5: embedding: .*384"),
    "missing field": (drop_field(2, "pinned"), "line 2: missing fields: pinned"),
    "unknown field": (set_field(3, "colour", "red"), "line 3: unknown fields: colour"),
    "repeated id": (copy_id(2, 8), "line 8: id .* appears twice"),
    "not utf-8": (replace_line(6, "\udcff"), "line 6: not UTF-8"),
    "cut short": (lambda lines: lines.pop(), "promises 9 records, the file holds 8"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_line_is_named_and_nothing_is_imported(
    case: str, exported: Exported, fresh: MemoryStream, tmp_path: Path
) -> None:
    edit, message = MALFORMED[case]
    lines = exported.full.read_text(encoding="utf-8").splitlines()
    edit(lines)
    path = tmp_path / "broken.jsonl"
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogateescape") + b"\n")
    with pytest.raises(ValueError, match=message):
        import_jsonl(fresh, path)
    assert fresh.records.count() == 0


HEADERS: dict[str, tuple[str, str]] = {
    "empty": ("", "is empty"),
    "not json": ("hello", "line 1: not a Brain OS memory export"),
    "other format": ('{"format": "other", "version": 1}', "not a Brain OS memory export"),
    "newer version": (
        '{"format": "brain-os-memory", "version": 2, "count": 0, "embeddings": false}',
        "version 2 is not supported",
    ),
    "no count": (
        '{"format": "brain-os-memory", "version": 1, "embeddings": false}',
        "needs a count",
    ),
    "other dimensions": (
        '{"format": "brain-os-memory", "version": 1, "count": 0, "embeddings": true, '
        '"dimensions": 512}',
        "512 dimensions, this memory uses 384",
    ),
}


@pytest.mark.parametrize("case", HEADERS)
def test_a_wrong_header_is_refused(case: str, fresh: MemoryStream, tmp_path: Path) -> None:
    header, message = HEADERS[case]
    path = tmp_path / "other.jsonl"
    path.write_text(header + "\n" if header else "", encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        import_jsonl(fresh, path)


def test_a_failed_export_leaves_no_file(
    exported: Exported, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(record: MemoryRecord, vector_format: str) -> str:
        raise RuntimeError("disk trouble")

    monkeypatch.setattr(export, "_record_line", fail)
    with pytest.raises(RuntimeError):
        export_jsonl(exported.stream, tmp_path / "memory.jsonl")
    assert list(tmp_path.iterdir()) == []


# Markdown


def parse_note(content: str) -> tuple[dict[str, Any], str]:
    """Front matter (one JSON value per key) and body."""
    assert content.startswith("---\n")
    head, _, body = content[4:].partition("\n---\n")
    meta = {}
    for line in head.splitlines():
        key, _, value = line.partition(": ")
        meta[key] = json.loads(value)
    return meta, body


def read_vault(vault: Path) -> dict[str, tuple[str, dict[str, Any], str]]:
    """Record id -> (note name, front matter, body), for every note but the index."""
    notes = {}
    for path in vault.glob("*.md"):
        if path.stem != "Memory":
            meta, body = parse_note(path.read_text(encoding="utf-8"))
            notes[meta["id"]] = (path.stem, meta, body)
    return notes


def test_markdown_vault_has_a_note_per_record_an_index_and_obsidian(
    exported: Exported, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export, "PAGE_SIZE", 4)
    vault = tmp_path / "vault"
    assert export_markdown(exported.stream, vault) == RECORDS
    assert (vault / ".obsidian").is_dir()
    files = sorted(p.name for p in vault.iterdir() if p.is_file())
    assert len(files) == RECORDS + 1 and "Memory.md" in files
    notes = read_vault(vault)
    assert set(notes) == {record.id for record in exported.records}
    names = {name for name, _, _ in notes.values()}
    assert len(names) == RECORDS and all(NOTE_NAME.fullmatch(name) for name in names)
    for record in exported.records:
        check_note(record, notes)


def check_note(record: MemoryRecord, notes: dict[str, tuple[str, dict[str, Any], str]]) -> None:
    name, meta, body = notes[record.id]
    cited = [notes[cited][0] for cited in record.evidence]
    assert name.startswith(record.created_at.date().isoformat() + " ")
    assert name.endswith(" " + record.id[:8])
    assert meta.pop("evidence") == cited
    for key in ("created_at", "last_accessed_at", "event_time", "updated_at"):
        meta[key] = meta[key] and datetime.fromisoformat(meta[key])
    meta["sources"] = tuple(meta["sources"])
    expected = {
        f.name: getattr(record, f.name)
        for f in fields(record)
        if f.name not in ("text", "embedding", "evidence")
    }
    assert meta == expected
    text, _, evidence = body.partition("\n## Evidence\n")
    assert text == f"\n{record.text}\n"
    assert WIKILINK.findall(evidence) == cited


def test_the_index_links_every_note_once_by_kind(exported: Exported, tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    export_markdown(exported.stream, vault)
    index = (vault / "Memory.md").read_text(encoding="utf-8")
    notes = read_vault(vault)
    assert sorted(WIKILINK.findall(index)) == sorted(name for name, _, _ in notes.values())
    sections = re.split(r"\n## ", index)[1:]
    live = [r for r in exported.records if not r.deleted]
    present = [kind.capitalize() for kind in KINDS if any(r.kind == kind for r in live)]
    assert [section.split(" (")[0] for section in sections] == [*present, "Deleted"]
    for section in sections:
        group = section.split(" (")[0].lower()
        members = [r for r in exported.records if (r.deleted and group == "deleted")]
        members += [r for r in live if r.kind == group]
        in_order = sorted(members, key=lambda r: (r.created_at, r.id))
        assert WIKILINK.findall(section) == [notes[r.id][0] for r in in_order]


def test_note_names_stay_unique_and_safe(
    fresh: MemoryStream, tmp_path: Path, exported: Exported
) -> None:
    template = exported.records[0]
    ids = ["aaaaaaaa" + "1" * 24, "aaaaaaaa" + "2" * 24, "Weird/ID:*?<>|\\ 1", "weird-id-1"]
    records = [
        template.with_changes(id=record_id, text="Same words, same day!", evidence=())
        for record_id in ids
    ]
    citing = template.with_changes(id="c" * 32, text="Cites a lost one", evidence=("gone", ids[2]))
    fresh.restore_records([*records, citing])
    vault = tmp_path / "vault"
    assert export_markdown(fresh, vault) == 5
    notes = read_vault(vault)
    names = [notes[record_id][0] for record_id in ids]
    day = template.created_at.date().isoformat()
    assert names == [
        f"{day} same-words-same-day aaaaaaaa",
        f"{day} same-words-same-day {'aaaaaaaa' + '2' * 24}",
        f"{day} same-words-same-day weirdid1",
        f"{day} same-words-same-day weirdid1-2",
    ]
    _, meta, body = notes["c" * 32]
    assert meta["evidence"] == ["gone", names[2]]
    assert "- gone (not in the memory)" in body and f"[[{names[2]}]]" in body


def test_markdown_refuses_a_folder_that_is_not_empty(exported: Exported, tmp_path: Path) -> None:
    (tmp_path / "vault").mkdir()
    (tmp_path / "vault" / "mine.md").write_text("my own note", encoding="utf-8")
    with pytest.raises(ValueError, match="not an empty folder"):
        export_markdown(exported.stream, tmp_path / "vault")
    (tmp_path / "empty").mkdir()
    assert export_markdown(exported.stream, tmp_path / "empty") == RECORDS
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
