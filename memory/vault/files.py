"""The vault's files: notes by name (their path below the vault, without ``.md``), read whole
with their digest and time, written atomically, and found by walking the folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath

from memory.files import atomic_file
from memory.graph.export import ENTITY_FOLDER
from memory.records import Clock, utc_now
from memory.vault.state import digest

MEMORY_FOLDER = "Memories"
INBOX_FOLDER = "Inbox"
SUFFIX = ".md"


class _Changed(Exception):
    """The file changed on disk after it was read."""


@dataclass(frozen=True)
class NoteFile:
    data: bytes
    digest: str
    # When it was last written, by the clock the memory's times are on.
    changed_at: datetime


class VaultFiles:
    def __init__(self, root: Path, clock: Clock = utc_now) -> None:
        """``clock``: the memory's clock; a file's time is moved onto it (the service's clock
        may be shifted, docs/CONFIG.md ``heartbeat.clock_offset_minutes``)."""
        # Whole, as the watcher names the files it reports (a relative or linked folder too).
        self.root = root.expanduser().resolve()
        self._clock = clock

    def prepare(self) -> None:
        """The folders, and ``.obsidian/`` so that Obsidian opens the folder as a vault."""
        for folder in (".obsidian", MEMORY_FOLDER, INBOX_FOLDER):
            (self.root / folder).mkdir(parents=True, exist_ok=True)

    def path(self, name: str) -> Path:
        return self.root / f"{name}{SUFFIX}"

    def name(self, path: Path | str) -> str | None:
        """The note name of ``path``; None for what is no note of the vault's (not Markdown,
        hidden, in a hidden folder such as ``.obsidian/`` or Obsidian's ``.trash/``)."""
        try:
            relative = PurePosixPath(Path(path).relative_to(self.root).as_posix())
        except ValueError:
            return None
        if relative.suffix != SUFFIX or any(part.startswith(".") for part in relative.parts):
            return None
        return str(relative.with_suffix(""))

    @staticmethod
    def in_inbox(name: str) -> bool:
        return PurePosixPath(name).parts[0] == INBOX_FOLDER

    @staticmethod
    def is_entity(name: str) -> bool:
        return PurePosixPath(name).parts[0] == ENTITY_FOLDER

    def read(self, name: str) -> NoteFile | None:
        """The file, or None when there is none."""
        path = self.path(name)
        try:
            mtime = path.stat().st_mtime
            data = path.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        moment = datetime.fromtimestamp(mtime, UTC) + (self._clock() - utc_now())
        return NoteFile(data, digest(data), moment)

    def write(self, name: str, text: str, replacing: str | None) -> str | None:
        """Write the note whole or not at all, over the file of digest ``replacing`` (None: no
        file); returns its digest, or None, writing nothing, where the file on disk is no
        longer that one (the user saved it meanwhile: their note is read next)."""
        path = self.path(name)

        def unchanged() -> None:
            if self._digest(path) != replacing:
                raise _Changed

        try:
            with atomic_file(path, check=unchanged) as handle:
                handle.write(text)
        except _Changed:
            return None
        return digest(text)

    def remove(self, name: str, replacing: str | None) -> bool:
        """Remove the note if it is still the file of digest ``replacing``."""
        path = self.path(name)
        if self._digest(path) != replacing:
            return False
        path.unlink(missing_ok=True)
        return True

    @staticmethod
    def _digest(path: Path) -> str | None:
        try:
            return digest(path.read_bytes())
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def notes(self) -> Iterator[str]:
        """Every note's name, the entities' left out (the service writes them, never reads)."""
        for folder, subfolders, files in os.walk(self.root):
            subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
            for file in sorted(files):
                name = self.name(Path(folder) / file)
                if name is not None and not self.is_entity(name):
                    yield name
