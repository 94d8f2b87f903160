"""The knowledge graph written out: one Markdown note per entity for the memory vault (its
facts as [[wikilinks]] to the entities they relate it to, its past facts, and links to the
memory notes behind each), and a JSON Lines file with every entity and every triplet.

The JSON Lines file starts with a header line (format, version, counts), then one object per
line: ``{"type": "entity", ...}`` for each entity, then ``{"type": "triplet", ...}`` for each
fact, current and past, with its times in ISO 8601 and its episodes (memory ids, and
"<document>:<chunk>" ids of the pieces of documents in archival storage it was learnt from).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memory.files import atomic_file
from memory.graph.store import Entity, GraphStore, Triplet
from memory.records import utc_now

FORMAT = "brain-os-graph"
VERSION = 1
ENTITY_FOLDER = "Entities"
# Characters a note name cannot hold (Obsidian links and file systems).
UNSAFE = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f]')
NAME_CHARS = 60


def export_graph_jsonl(store: GraphStore, path: Path | str) -> tuple[int, int]:
    """Write every entity and triplet to ``path`` atomically; returns (entities, triplets)."""
    entities, _ = store.all_entities()
    triplets = _all_triplets(store, entities)
    header = {
        "format": FORMAT,
        "version": VERSION,
        "entities": len(entities),
        "triplets": len(triplets),
        "exported_at": utc_now().isoformat(),
    }
    with atomic_file(Path(path)) as handle:
        handle.write(json.dumps(header) + "\n")
        for entity in entities:
            line = {"type": "entity", "id": entity.id, "name": entity.name}
            handle.write(json.dumps({**line, "aliases": list(entity.aliases)}) + "\n")
        for triplet in triplets:
            handle.write(json.dumps({"type": "triplet", **_triplet_values(triplet)}) + "\n")
    return len(entities), len(triplets)


def write_entity_notes(store: GraphStore, vault: Path, memory_notes: dict[str, str]) -> list[str]:
    """One note per entity in ``vault/Entities``; ``memory_notes``: the note name of each
    memory (by id), for the links to the memories behind a fact. Returns the note names."""
    notes = entity_notes(store, memory_notes)
    if notes:
        folder = vault / ENTITY_FOLDER
        folder.mkdir()
        for name, note in notes.items():
            (folder / f"{name}.md").write_text(note, encoding="utf-8", errors="replace")
    return list(notes)


def entity_notes(store: GraphStore, memory_notes: Mapping[str, str]) -> dict[str, str]:
    """The text of each entity's note by its name (in the order of the entities)."""
    entities, _ = store.all_entities()
    if not entities:
        return {}
    names = note_names(entities)
    by_entity: dict[str, list[Triplet]] = {}
    for triplet in _all_triplets(store, entities):
        for entity_id in dict.fromkeys((triplet.subject, triplet.object)):
            by_entity.setdefault(entity_id, []).append(triplet)
    return {
        names[entity.id]: _entity_note(entity, by_entity.get(entity.id, []), names, memory_notes)
        for entity in entities
    }


def entities_of(store: GraphStore, record_ids: Sequence[str]) -> dict[str, list[str]]:
    """The entity notes each memory's facts are about (by memory id, for those with facts)."""
    wanted = set(record_ids)
    ends: dict[str, dict[str, None]] = {}
    for triplet in _by_time(store.triplets_of_memories(record_ids)):
        for record_id in wanted.intersection(triplet.episodes):
            ends.setdefault(record_id, {}).update(dict.fromkeys((triplet.subject, triplet.object)))
    if not ends:
        return {}
    entities, _ = store.all_entities()
    names = note_names(entities)
    return {
        record_id: [names[end] for end in found if end in names]
        for record_id, found in ends.items()
    }


def note_names(entities: Iterable[Entity]) -> dict[str, str]:
    """A unique, link-safe note name per entity id: its name, numbered when taken (case
    aside, as file systems may ignore it)."""
    names: dict[str, str] = {}
    taken: set[str] = set()
    for entity in entities:
        base = " ".join(UNSAFE.sub(" ", entity.name).split())[:NAME_CHARS].strip(" .") or "entity"
        name, number = base, 2
        while name.casefold() in taken:
            name, number = f"{base} {number}", number + 1
        taken.add(name.casefold())
        names[entity.id] = name
    return names


def _all_triplets(store: GraphStore, entities: list[Entity]) -> list[Triplet]:
    return _by_time(store.triplets_about([e.id for e in entities]))


def _by_time(triplets: list[Triplet]) -> list[Triplet]:
    return sorted(triplets, key=lambda t: (t.valid_from, t.id))


def _entity_note(
    entity: Entity,
    triplets: list[Triplet],
    names: dict[str, str],
    memory_notes: Mapping[str, str],
) -> str:
    lines = ["---", f"aliases: {json.dumps(list(entity.aliases))}", "type: entity"]
    lines += [f"id: {json.dumps(entity.id)}", "---", "", f"# {entity.name}", ""]
    current = [t for t in triplets if t.current]
    past = [t for t in triplets if not t.current]
    for heading, group in (("Facts", current), ("Past facts", past)):
        if group:
            lines += [f"## {heading}", ""]
            lines += [_fact_line(t, entity, names, memory_notes) for t in group]
            lines.append("")
    if not triplets:
        lines += ["No facts about it yet.", ""]
    return "\n".join(lines)


def _fact_line(
    triplet: Triplet, entity: Entity, names: dict[str, str], memory_notes: Mapping[str, str]
) -> str:
    def side(entity_id: str, name: str) -> str:
        return name if entity_id == entity.id else f"[[{names.get(entity_id, name)}|{name}]]"

    maybe = " (maybe)" if triplet.hypothesis else ""
    text = (
        f"{side(triplet.subject, triplet.subject_name)} {triplet.relation} "
        f"{side(triplet.object, triplet.object_name)}{maybe}"
    )
    since = triplet.valid_from.date().isoformat()
    held = (
        f"since {since}"
        if triplet.valid_until is None
        else f"{since} to {triplet.valid_until.date().isoformat()}"
    )
    sources = [f"[[{memory_notes[i]}]]" for i in triplet.episodes if i in memory_notes]
    learnt = f" · from {', '.join(sources)}" if sources else ""
    return f"- {text} ({held}){learnt}"


def _triplet_values(triplet: Triplet) -> dict[str, Any]:
    return {
        "id": triplet.id,
        "subject": triplet.subject,
        "subject_name": triplet.subject_name,
        "relation": triplet.relation,
        "object": triplet.object,
        "object_name": triplet.object_name,
        "hypothesis": triplet.hypothesis,
        "valid_from": triplet.valid_from.isoformat(),
        "valid_until": triplet.valid_until.isoformat() if triplet.valid_until else None,
        "replaced_by": triplet.replaced_by,
        "episodes": list(triplet.episodes),
    }
