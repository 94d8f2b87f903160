"""The live vault's two threads: one waits on the folder with ``watchfiles`` (the kernel's
file events, no polling), one does the syncing (memory/vault/sync.py) off the event loop,
once a burst of changes has settled. Both stop on one event."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

import watchfiles

from memory.vault.sync import VaultSync

log = logging.getLogger(__name__)
# watchfiles logs every batch of changes at INFO: the service's log would fill with them.
logging.getLogger("watchfiles").setLevel(logging.WARNING)

# How long a thread may take to stop.
JOIN_S = 10.0


@dataclass(frozen=True)
class Timing:
    """``memory_s``: how long after a memory changes its note is written (a burst of changes
    is written once); ``note_s``: how long a note must stay unchanged before it is read
    (Obsidian saves as you type); ``inbox_s``: the same for a new note of the inbox, which
    becomes a memory and goes (it is given time to be written whole)."""

    memory_s: float = 0.5
    note_s: float = 2.0
    inbox_s: float = 10.0


class Pending:
    """What waits to be synced, and from when: memories, by id (from the first change of a
    burst), notes, by name (from their last change), and the graph."""

    def __init__(self, timing: Timing) -> None:
        self.timing = timing
        self.changed = threading.Condition()
        self._records: dict[str, float] = {}
        self._graph: dict[str, float] = {}
        self._notes: dict[str, float] = {}

    def records(self, ids: Iterable[str], graph: bool = False) -> None:
        due = time.monotonic() + self.timing.memory_s
        with self.changed:
            waiting = self._graph if graph else self._records
            for record_id in ids:
                waiting.setdefault(record_id, due)
            if graph:
                # An empty id stands for the entity notes (a change with no memory behind it).
                waiting.setdefault("", due)
            self.changed.notify()

    def notes(self, names: Iterable[str], inbox: set[str]) -> None:
        now = time.monotonic()
        with self.changed:
            for name in names:
                self._notes[name] = now + (
                    self.timing.inbox_s if name in inbox else self.timing.note_s
                )
            self.changed.notify()

    def take(self) -> tuple[list[str], list[str], list[str]]:
        """The memories, graph memories and notes now due (holding ``changed``)."""
        now = time.monotonic()
        return _due(self._records, now), _due(self._graph, now), _due(self._notes, now)

    def wait_s(self) -> float | None:
        """How long until the next is due (None: nothing waits; holding ``changed``)."""
        dues = [*self._records.values(), *self._graph.values(), *self._notes.values()]
        return max(0.0, min(dues) - time.monotonic()) if dues else None


def _due(waiting: dict[str, float], now: float) -> list[str]:
    due = [key for key, at in waiting.items() if at <= now]
    for key in due:
        del waiting[key]
    return due


class VaultWatch:
    def __init__(self, sync: VaultSync, timing: Timing) -> None:
        self.sync = sync
        self.pending = Pending(timing)
        # Set once the vault was brought in step at start (for tests and the log).
        self.caught_up = threading.Event()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._syncing, name="vault-sync", daemon=True),
            threading.Thread(target=self._watching, name="vault-watch", daemon=True),
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        """Stop both threads (a sync under way ends first)."""
        self._stop.set()
        with self.pending.changed:
            self.pending.changed.notify()
        for thread in self._threads:
            if thread.is_alive():
                thread.join(JOIN_S)
                if thread.is_alive():
                    log.warning("vault: %s did not stop in %.0f s", thread.name, JOIN_S)

    def _watching(self) -> None:
        files = self.sync.files
        try:
            for changes in watchfiles.watch(
                files.root,
                watch_filter=lambda change, path: path.endswith(".md"),
                stop_event=self._stop,
                debounce=400,
                raise_interrupt=False,
            ):
                names = {files.name(path) for _, path in changes} - {None}
                inbox = {n for n in names if n is not None and files.in_inbox(n)}
                self.pending.notes((n for n in names if n is not None), inbox)
        except (OSError, RuntimeError) as error:  # the folder went away, or no file events
            log.error("vault: stopped watching %s: %s", files.root, error)

    def _syncing(self) -> None:
        try:
            self.sync.catch_up(self._stop.is_set)
            log.info("vault: %s is in step with the memory", self.sync.files.root)
        except Exception:  # logged; the changes that come next are still synced
            log.exception("vault: bringing %s in step failed", self.sync.files.root)
        self.caught_up.set()
        while not self._stop.is_set():
            with self.pending.changed:
                self.pending.changed.wait(self.pending.wait_s())
                if self._stop.is_set():
                    return
                records, graph, notes = self.pending.take()
            try:
                if graph:
                    self.sync.graph_changed([i for i in graph if i])
                if records:
                    self.sync.records_changed(records)
                if notes:
                    self.sync.files_changed(notes)
            except Exception:  # logged; the next changes are synced again
                log.exception("vault: a sync failed")
