"""The knowledge graph's entity notes in the live vault: rendered as the one-shot export does
(memory/graph/export.py), rewritten when they change, removed when their entity is gone. The
service owns them: an edit made to one is not read back, and goes at the next rewrite (facts
are corrected on the graph screen)."""

from __future__ import annotations

from collections.abc import Mapping

from memory.graph.export import ENTITY_FOLDER, entity_notes
from memory.graph.store import GraphStore
from memory.vault.files import VaultFiles
from memory.vault.state import VaultState, digest


class EntityNotes:
    def __init__(self, files: VaultFiles, graph: GraphStore, state: VaultState) -> None:
        self.files = files
        self.graph = graph
        self.state = state

    def refresh(self, memory_notes: Mapping[str, str]) -> None:
        """Write the entity notes that differ from the graph now; ``memory_notes``: the note
        name of each memory, for the links to the memories behind a fact."""
        notes = {
            f"{ENTITY_FOLDER}/{name}": text
            for name, text in entity_notes(self.graph, memory_notes).items()
        }
        for name, text in notes.items():
            written = digest(text)
            on_disk = self.files.read(name)
            if on_disk is None or on_disk.digest != written:
                self.files.write(name, text, on_disk.digest if on_disk else None)
            if self.state.entities.get(name) != written:
                self.state.entity(name, written)
        for name in [n for n in self.state.entities if n not in notes]:
            self.files.remove(name, self.state.entities[name])
            self.state.entity(name, None)
