"""The knowledge graph exported: entity notes in the Markdown vault, with wikilinks along
relations and to the memory notes behind each fact, and JSON Lines (real LanceDB, real
embedder)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from assistant.cli import _export, build_parser
from assistant.config import LoadedConfig
from memory.database import open_database
from memory.embedder import OnnxSentenceEmbedder
from memory.export import export_markdown
from memory.graph.export import FORMAT, export_graph_jsonl, note_names
from memory.graph.store import Entity, GraphStore
from memory.locking import WriteLock
from memory.stream import MemoryStream
from tests.memory_helpers import START, open_stream, store_fact

LINK = re.compile(r"\[\[([^\]|]+)(?:\|[^\]]*)?\]\]")


def seeded(stream: MemoryStream, store: GraphStore) -> dict[str, str]:
    parma = stream.add("User: My sister Aya lives in Parma.", source="user")
    lugano = stream.add("User: Aya moved to Lugano.", source="user")
    old = store_fact(store, "Aya", "lives in", "Parma", (parma.id,), START)
    new = store_fact(store, "Aya", "lives in", "Lugano", (lugano.id,), START + timedelta(days=30))
    store.retire(old.id, new.valid_from, new.id)
    store_fact(store, "user", "is sibling of", "Aya", (parma.id,), START)
    return {"parma": parma.id, "lugano": lugano.id}


def test_the_vault_has_a_note_per_entity_linked_along_relations_and_to_memories(
    stream: MemoryStream, graph_store: GraphStore, tmp_path: Path
) -> None:
    seeded(stream, graph_store)
    vault = tmp_path / "vault"
    assert export_markdown(stream, vault, graph_store) == 2 + 4
    notes = {p.stem: p.read_text(encoding="utf-8") for p in (vault / "Entities").glob("*.md")}
    assert set(notes) == {"Aya", "Parma", "Lugano", "user"}
    aya = notes["Aya"]
    facts, past = aya.split("## Past facts")
    assert "- Aya lives in [[Lugano|Lugano]] (since 2026-12-21)" in facts
    assert "- [[user|user]] is sibling of Aya (since 2026-11-21)" in facts
    assert "- Aya lives in [[Parma|Parma]] (2026-11-21 to 2026-12-21)" in past
    # Every link leads to a note of the vault: an entity or a memory.
    every_note = {p.stem for p in vault.rglob("*.md")}
    links = {link for text in notes.values() for link in LINK.findall(text)}
    assert links and links <= every_note
    memory_links = links - set(notes)
    assert len(memory_links) == 2  # the two memories behind the facts
    # The index lists the entities.
    index = (vault / "Memory.md").read_text(encoding="utf-8")
    assert "## Entities (4)" in index and "- [[Aya]]" in index


def test_note_names_are_safe_and_unique() -> None:
    entities = [
        Entity("1", "A/B: c?"),
        Entity("2", "a/b: C?"),
        Entity("3", "[[x]]"),
        Entity("4", "#"),
    ]
    assert list(note_names(entities).values()) == ["A B c", "a b C 2", "x", "entity"]


def test_the_graph_goes_into_json_lines_whole(
    stream: MemoryStream, graph_store: GraphStore, tmp_path: Path
) -> None:
    ids = seeded(stream, graph_store)
    path = tmp_path / "graph.jsonl"
    assert export_graph_jsonl(graph_store, path) == (4, 3)
    header, *lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert header["format"] == FORMAT and (header["entities"], header["triplets"]) == (4, 3)
    entities = [line for line in lines if line["type"] == "entity"]
    triplets = {
        f"{t['subject_name']} {t['relation']} {t['object_name']}": t
        for t in lines
        if t["type"] == "triplet"
    }
    assert {e["name"] for e in entities} == {"Aya", "Parma", "Lugano", "user"}
    parma, lugano = triplets["Aya lives in Parma"], triplets["Aya lives in Lugano"]
    assert parma["valid_until"] == lugano["valid_from"] and parma["replaced_by"] == lugano["id"]
    assert lugano["valid_until"] is None and lugano["episodes"] == [ids["lugano"]]


def test_brain_export_writes_all_three(
    loaded_for: Callable[..., LoadedConfig],
    embedder: OnnxSentenceEmbedder,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    loaded = loaded_for()
    data = loaded.settings.data_dir
    stream = open_stream(data, embedder)
    seeded(stream, GraphStore(open_database(data), WriteLock(data / "memory.lock"), embedder))
    stream.close()
    out = tmp_path / "out"
    args = build_parser().parse_args(
        [
            "export",
            "--vault",
            str(out / "vault"),
            "--jsonl",
            str(out / "memory.jsonl"),
            "--graph-jsonl",
            str(out / "graph.jsonl"),
        ]
    )
    assert _export(loaded, args) == 0
    said = capsys.readouterr().out
    assert "2 memories written" in said and "6 notes" in said and "4 entities and 3 facts" in said
    assert (out / "vault" / "Entities" / "Aya.md").exists()
    # Exporting into a folder that is not empty is refused, in one line, with nothing lost.
    assert _export(loaded, args) == 1
    assert "not an empty folder" in capsys.readouterr().err
    assert _export(loaded, build_parser().parse_args(["export"])) == 2
