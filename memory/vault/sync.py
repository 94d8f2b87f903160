"""Keeping a vault and the memory in step, both ways: a memory's note is written when the
memory changes, and a note the user changed is brought into the memory (memory/vault/decide.py
decides how), as the service is told of each (it watches the folder and the stores' change
feeds, assistant/service/vault_relay.py). Called from one thread at a time."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from memory.graph.export import entities_of
from memory.graph.store import GraphStore
from memory.records import Clock, MemoryRecord, utc_now
from memory.stream import MemoryRequestError, MemoryStream
from memory.vault.decide import Step, file_action, reconcile
from memory.vault.entities import EntityNotes
from memory.vault.files import MEMORY_FOLDER, NoteFile, VaultFiles
from memory.vault.notes import note_name, render_note
from memory.vault.parse import NoteError, NoteView, parse_note
from memory.vault.state import Synced, VaultState, digest

log = logging.getLogger(__name__)

# The front matter of a live note: what the user may want to see or change, not what moves
# with every retrieval (last access, utility), which would rewrite notes all day.
LIVE_KEYS = (
    "id",
    "kind",
    "importance",
    "created_at",
    "event_time",
    "pinned",
    "sources",
    "evidence",
)
# Records read from the store at a time.
BATCH = 500


class NoteEdits(Protocol):
    """How the vault changes the memory: the way the user's screen does (the service passes
    its memory desk), so validation, history, undo and telling the clients are the same."""

    def edit(self, record_id: str, changes: Mapping[str, Any]) -> None: ...

    def delete(self, record_id: str) -> None: ...

    def restore(self, record_id: str) -> None: ...

    def add(self, text: str, importance: int | None, pinned: bool) -> str:
        """A new memory from a note of the inbox; returns its id."""
        ...


class VaultSync:
    def __init__(
        self,
        files: VaultFiles,
        stream: MemoryStream,
        graph: GraphStore,
        state: VaultState,
        edits: NoteEdits,
        report: Callable[[str], None],
        clock: Clock = utc_now,
    ) -> None:
        """``report`` is told, in one line, of a note that cannot be read (once per version of
        it); ``clock``: the memory's, for when a note was deleted."""
        self.files = files
        self.stream = stream
        self.graph = graph
        self.state = state
        self.edits = edits
        self._report = report
        self._clock = clock
        self._reported: dict[str, str] = {}
        # Notes found with a memory's id that the state did not know (it was lost): the
        # memory's note is written there, rather than beside them.
        self._adopted: dict[str, str] = {}
        self._entities = EntityNotes(files, graph, state)

    # What the service calls

    def catch_up(self, stop: Callable[[], bool] = lambda: False) -> None:
        """Bring the whole vault in step (at start): notes moved or renamed are found by their
        id, every memory's note is written where missing or stale, edits made while the
        service was stopped are applied, the inbox is read and the entity notes refreshed.
        ``stop``: give up between batches (the service is stopping)."""
        self.files.prepare()
        found: dict[str, list[str]] = {}
        for name in self.files.notes():
            if self.files.in_inbox(name):
                continue
            view = self._quiet_view(name)
            if view is not None and view.id is not None:
                found.setdefault(view.id, []).append(name)
        if not found and any(s.file is not None for s in self.state.notes.values()):
            # Not one of the notes is left: another folder, or one emptied by hand; deleting
            # every memory would be the wrong reading of it. The memory is written out again.
            log.warning("vault: no note of the memory is in %s; writing them all", self.files.root)
            self.state.clear()
        for record_id, names in found.items():
            self._locate(record_id, names)
        live = self.stream.records.query(where="deleted = false", columns=["id"])
        ids = list(dict.fromkeys([*live.column("id").to_pylist(), *self.state.notes]))
        for start in range(0, len(ids), BATCH):
            if stop():
                return
            self.records_changed(ids[start : start + BATCH], notes_settled=True)
        self.files_changed([n for n in self.files.notes() if self.files.in_inbox(n)])
        self._entities.refresh(self.state.names())
        self.state.save()

    def records_changed(self, record_ids: Collection[str], notes_settled: bool = False) -> None:
        """The memory changed these records: their notes are written (or removed). A note
        that differs from what was last synced (or is gone) is left for the watcher to tell
        of, once it has settled (``notes_settled``: it has): it may be half typed, or moved
        away a moment ago, which is no deletion."""
        ids = list(dict.fromkeys(record_ids))
        for start in range(0, len(ids), BATCH):
            batch = ids[start : start + BATCH]
            records = {r.id: r for r in self.stream.get_many(batch, embeddings=False)}
            entities = entities_of(self.graph, list(records))
            for record_id in batch:
                record = records.get(record_id)
                if record is None and record_id not in self.state.notes:
                    continue  # not a memory (a document's piece the graph read)
                links = entities.get(record_id, [])
                if not self._in_step(record_id, record, links):
                    self._sync(record_id, links, notes_settled)
        self.state.save()

    def files_changed(self, names: Iterable[str]) -> None:
        """These notes changed on disk (written, moved, deleted): the notes there now first,
        so that a note moved away is not taken for a deleted one."""
        # The entity notes are the service's own: an edit there is not read back.
        wanted = [n for n in dict.fromkeys(names) if not self.files.is_entity(n)]
        present = [n for n in wanted if self.files.path(n).is_file()]
        by_name = self.state.by_name()
        gone = {by_name[n] for n in wanted if n in by_name and n not in present}
        if gone:
            self._find_moved(gone, by_name)
        known: list[str] = []
        for name in [*present, *(n for n in wanted if n not in present)]:
            if name in by_name:
                known.append(by_name[name])
            elif name in present and self.files.in_inbox(name):
                self._ingest(name)
            elif name in present:
                self._arrived(name)
        self.records_changed(known, notes_settled=True)

    def graph_changed(self, record_ids: Collection[str]) -> None:
        """The knowledge graph learnt or changed facts (from these memories)."""
        self.records_changed(record_ids)
        self._entities.refresh(self.state.names())
        self.state.save()

    # One memory and its note

    def _in_step(self, record_id: str, record: MemoryRecord | None, links: Sequence[str]) -> bool:
        """Nothing to do: the note is as last synced and so is the memory."""
        base = self.state.notes.get(record_id)
        if base is None or record is None:
            return base is None and (record is None or record.deleted)
        note = self.files.read(base.name)
        return (
            (note.digest if note else None) == base.file
            and record.deleted == base.deleted
            and digest(self._render(record, links)) == base.rendered
        )

    def _sync(self, record_id: str, links: Sequence[str], notes_settled: bool) -> None:
        # Held from reading the memory to writing it back, so that an edit on screen made at
        # the same moment is not overwritten by a decision taken before it.
        with self.stream.holding():
            record = self.stream.get(record_id)
            base = self.state.notes.get(record_id)
            if base is None:
                if record is not None and not record.deleted:
                    name = self._new_name(record)
                    self._settle(name, record, None, self.files.read(name), links)
                return
            note = self.files.read(base.name)
            if record is None:  # gone from the memory altogether
                self.files.remove(base.name, base.file)
                self.state.forget(record_id)
                return
            if (note.digest if note else None) == base.file:
                self._settle(base.name, record, None, note, links)
                return
            if not notes_settled:
                return
            view = self._view(base.name, note, record_id) if note is not None else None
            if note is not None and view is None:
                return  # reported; left as it is, and the memory as it is too
            when = note.changed_at if note is not None else self._clock()
            try:
                self._apply(record_id, reconcile(base, record, view, when))
            except (MemoryRequestError, ValueError) as error:  # refused, as on screen
                self._broken(base.name, note.digest if note else "", f"not applied: {error}")
                return
            after = self.stream.get(record_id)
            if after is None:
                self.state.forget(record_id)
            else:
                self._settle(base.name, after, view, note, links)

    def _apply(self, record_id: str, steps: Sequence[Step]) -> None:
        for step in steps:
            if step.action == "edit":
                self.edits.edit(record_id, step.changes)
            elif step.action == "delete":
                self.edits.delete(record_id)
            else:
                self.edits.restore(record_id)

    def _settle(
        self,
        name: str,
        record: MemoryRecord,
        view: NoteView | None,
        note: NoteFile | None,
        links: Sequence[str],
    ) -> None:
        """Make the note what the memory says and remember both: ``note`` is the file as read,
        ``view`` what it says where the user changed it (kept if it says what the memory
        does). A note saved again by the user meanwhile is left for its own turn."""
        rendered = self._render(record, links)
        action = file_action(record, view, rendered)
        on_disk = note.digest if note is not None else None
        written: str | None = None
        if action == "write":
            written = self.files.write(name, rendered, on_disk)
            if written is None:
                return
        elif action == "keep":
            written = on_disk
        elif not self.files.remove(name, on_disk):
            return
        synced = Synced(
            name=name,
            file=written,
            rendered=digest(rendered),
            text=digest(record.text),
            importance=record.importance,
            pinned=record.pinned,
            deleted=record.deleted,
        )
        self.state.note(record.id, synced)

    def _render(self, record: MemoryRecord, links: Sequence[str]) -> str:
        return render_note(record, self.state.names(), LIVE_KEYS, links)

    def _new_name(self, record: MemoryRecord) -> str:
        adopted = self._adopted.pop(record.id, None)
        if adopted is not None:
            return adopted
        taken = self.state.taken
        return f"{MEMORY_FOLDER}/{note_name(record.id, record.created_at, record.text, taken)}"

    # Notes the vault did not know

    def _ingest(self, name: str) -> None:
        """A note of the inbox becomes a memory, and its file gives way to the memory's note."""
        note = self.files.read(name)
        view = self._view(name, note, None) if note is not None else None
        if view is None:
            return
        if view.id is not None:  # a memory's note moved into the inbox
            self._arrived(name)
            return
        if not view.text:
            return  # a note just made, still empty: it is read once written
        try:
            record_id = self.edits.add(view.text, view.importance, bool(view.pinned))
        except (MemoryRequestError, ValueError) as error:  # refused, as on screen
            self._broken(name, note.digest if note is not None else "", f"not added: {error}")
            return
        self.files.remove(name, note.digest if note is not None else None)
        self.records_changed([record_id])

    def _arrived(self, name: str) -> None:
        """A note the vault did not know of at ``name``: a memory's note moved or renamed
        there, or the user's own note (left alone)."""
        view = self._quiet_view(name)
        if view is not None and view.id is not None and self._locate(view.id, [name]):
            self.records_changed([view.id], notes_settled=True)
            self._entities.refresh(self.state.names())

    def _find_moved(self, record_ids: set[str], known: Mapping[str, str]) -> None:
        """Look for the notes of ``record_ids``, gone from their place, elsewhere in the vault
        (a move's two events may come apart): only notes the state does not know are read."""
        for name in self.files.notes():
            if name not in known and not self.files.in_inbox(name):
                view = self._quiet_view(name)
                if view is not None and view.id in record_ids:
                    self._locate(view.id, [name])

    def _locate(self, record_id: str, names: Sequence[str]) -> bool:
        """Notes found with ``record_id``: True where the memory's note is now the first of
        them (moved there from its own place, now empty, or adopted there when the state was
        lost); others are copies, reported."""
        base = self.state.notes.get(record_id)
        if base is not None and self.files.path(base.name).is_file():
            for name in names:
                if name != base.name:
                    self._broken(name, "", f"a copy of the note {base.name}")
            return False
        if base is None and self.stream.get(record_id) is None:
            for name in names:
                self._broken(name, "", f"no memory has the id {record_id}")
            return False
        first, *copies = names
        if base is None:
            self._adopted[record_id] = first
        else:
            self.state.note(record_id, replace(base, name=first))
        for name in copies:
            self._broken(name, "", f"a copy of the note {first}")
        return True

    # Reading notes, and telling of those that cannot be read

    def _view(self, name: str, note: NoteFile, record_id: str | None) -> NoteView | None:
        """The note, or None when it cannot be read as the note of ``record_id`` (reported
        once per version of the file)."""
        try:
            view = parse_note(note.data)
            if record_id is not None and view.id != record_id:
                raise NoteError(f"its id is not {record_id}")
            if record_id is not None and not view.text:
                raise NoteError("it has no text")
        except NoteError as error:
            self._broken(name, note.digest, str(error))
            return None
        self._reported.pop(name, None)
        return view

    def _quiet_view(self, name: str) -> NoteView | None:
        """A note that may be the user's own: None, and nothing said, where it is unreadable
        (or an entity's note, moved out of its folder)."""
        note = self.files.read(name)
        try:
            view = parse_note(note.data) if note is not None else None
        except NoteError:
            return None
        return None if view is None or view.front.get("type") == "entity" else view

    def _broken(self, name: str, version: str, reason: str) -> None:
        if self._reported.get(name) == version:
            return
        self._reported[name] = version
        line = f"vault note {name}.md: {' '.join(reason.split())}; left as it is"
        log.warning("%s", line)
        self._report(line)
