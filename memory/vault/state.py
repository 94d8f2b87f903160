"""What the service last wrote to the vault and last agreed on with it, kept in a small file
in the data folder so that its own writes are never taken for the user's edits, and so that
what changed on either side while it was stopped is found at the next start."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from memory.files import atomic_file

log = logging.getLogger(__name__)

VERSION = 1


def digest(data: bytes | str) -> str:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()[:32]


@dataclass(frozen=True)
class Synced:
    """One memory's note at its last sync. ``name``: its path in the vault, without ``.md``;
    ``file``: the digest of the file as it was then (None: no file, the memory being deleted);
    ``rendered``: the digest of the note rendered from the memory then; ``text`` (a digest),
    ``importance``, ``pinned`` and ``deleted``: what both sides said then."""

    name: str
    file: str | None
    rendered: str
    text: str
    importance: int
    pinned: bool
    deleted: bool


class VaultState:
    """The state of the vault at ``vault``, read from ``path`` (a file for another vault, or
    none, is an empty state: every note is then written from the memory)."""

    def __init__(self, path: Path, vault: Path) -> None:
        self.path = path
        self.vault = str(vault.resolve())
        self.notes: dict[str, Synced] = {}
        # The entity notes the service wrote: their digest by name.
        self.entities: dict[str, str] = {}
        self._names: dict[str, str] = {}
        # Every note name in use (a new note's name is none of them).
        self.taken: set[str] = set()
        self._dirty = False
        self._load()

    def _load(self) -> None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if data.get("version") != VERSION or data.get("vault") != self.vault:
                return
            self.notes = {key: Synced(**value) for key, value in data["notes"].items()}
            self.entities = dict(data["entities"])
            self._names = {key: Path(s.name).name for key, s in self.notes.items()}
            self.taken = set(self._names.values())
        except FileNotFoundError:
            return
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            log.warning("vault: %s unreadable (%s); every note is written again", self.path, error)
            self.notes, self.entities, self._names, self.taken = {}, {}, {}, set()

    def clear(self) -> None:
        """Forget every note (the memory's notes are then all written anew)."""
        self.notes, self._names, self.taken = {}, {}, set()
        self._dirty = True

    def note(self, record_id: str, synced: Synced) -> None:
        self.notes[record_id] = synced
        self.taken.discard(self._names.get(record_id, ""))
        self._names[record_id] = Path(synced.name).name
        self.taken.add(self._names[record_id])
        self._dirty = True

    def forget(self, record_id: str) -> None:
        if self.notes.pop(record_id, None) is not None:
            self.taken.discard(self._names.pop(record_id))
            self._dirty = True

    def entity(self, name: str, written: str | None) -> None:
        if written is None:
            self.entities.pop(name, None)
        else:
            self.entities[name] = written
        self._dirty = True

    def names(self) -> Mapping[str, str]:
        """The note name (a link's target: no folder) of every memory, by id."""
        return self._names

    def by_name(self) -> dict[str, str]:
        """The memory id of each note path."""
        return {s.name: record_id for record_id, s in self.notes.items()}

    def save(self) -> None:
        if not self._dirty:
            return
        data = {
            "version": VERSION,
            "vault": self.vault,
            "notes": {key: asdict(value) for key, value in self.notes.items()},
            "entities": self.entities,
        }
        with atomic_file(self.path, 0o600) as handle:
            json.dump(data, handle, ensure_ascii=False)
        self._dirty = False
