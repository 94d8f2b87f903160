"""The live vault (docs/VAULT.md) between the memory and its folder: started once the memory
is open when ``vault.path`` is set, stopped before the memory closes. What the stores change
(their change feeds) and what the folder's watcher sees go to the sync's thread
(vault_watch.py); what the vault changes in the memory is made by the memory desk, as an edit
on screen is, and told to every client and the agent; a note that cannot be read is told to
the clients in one line."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any, cast

from assistant.agent.tools import Stores
from assistant.protocol.common import Notice, Wire
from assistant.protocol.memory import AddMemory, MemoryDelete, MemoryEdit
from assistant.service.desks.memory import Changed, MemoryDesk
from assistant.service.jobs import FromThread
from assistant.service.session import Session
from assistant.service.vault_watch import Timing, VaultWatch
from assistant.settings import Settings
from memory.vault.files import VaultFiles
from memory.vault.state import VaultState
from memory.vault.sync import VaultSync

log = logging.getLogger(__name__)

STATE_FILE = "vault.json"
# The ref of the requests the vault makes of the memory desk, and who the log names.
WHO = "vault"


class DeskEdits:
    """The vault's changes to the memory, made by the memory desk as the screen's are
    (validation, history, undo, utility), each then ``told`` (record id, what was done)."""

    def __init__(self, stores: Stores, told: Callable[[tuple[str, str]], None]) -> None:
        self.stores = stores
        self.desk = MemoryDesk(stores)
        self.told = told

    def edit(self, record_id: str, changes: Mapping[str, Any]) -> None:
        self._tell(self.desk.edit(MemoryEdit(ref=WHO, id=record_id, **changes)))

    def delete(self, record_id: str) -> None:
        self._tell(self.desk.delete(MemoryDelete(ref=WHO, id=record_id)))

    def restore(self, record_id: str) -> None:
        self._tell(self.desk.delete(MemoryDelete(ref=WHO, id=record_id, restore=True)))

    def add(self, text: str, importance: int | None, pinned: bool) -> str:
        request = AddMemory(ref=WHO, text=text, importance=importance, pinned=pinned, source=WHO)
        done = self.desk.add(request)
        self._tell(done)
        return done.row.id

    def _tell(self, done: Changed) -> None:
        self.told((done.row.id, done.text))


class VaultRelay:
    def __init__(
        self,
        settings: Settings,
        changed: Callable[[Session, str, str, str], None],
        broadcast: Callable[[Wire], None],
        from_thread: FromThread,
        timing: Timing,
    ) -> None:
        """``changed`` tells the clients and the agent of a change to a memory (on the loop);
        ``from_thread`` makes a handler callable from the vault's threads."""
        self.settings = settings
        self.changed = changed
        self.broadcast = broadcast
        self.from_thread = from_thread
        self.timing = timing
        self.watch: VaultWatch | None = None
        self._unlisten: list[Callable[[], None]] = []

    def start(self, session: Session) -> None:
        """Keep the vault of ``vault.path`` (if set) in step with the session's memory."""
        folder = self.settings.vault.path
        if folder is None:
            return
        files = VaultFiles(folder, session.clock)
        try:
            files.prepare()
        except OSError as error:
            text = f"the vault {folder} cannot be kept: {error}"
            log.error("%s", text)
            self.broadcast(Notice(text=text, level="error"))
            return
        stores = session.stores
        told = self.from_thread(lambda pair: self._told(session, pair))
        report = self.from_thread(self._report)
        sync = VaultSync(
            files,
            stores.stream,
            stores.graph,
            VaultState(self.settings.data_dir / STATE_FILE, folder),
            DeskEdits(stores, told),
            report,
            session.clock,
        )
        self.watch = watch = VaultWatch(sync, self.timing)
        self._unlisten = [
            stores.stream.feed.listen(watch.pending.records),
            stores.graph.feed.listen(lambda ids: watch.pending.records(ids, graph=True)),
        ]
        watch.start()
        log.info("vault: keeping %s in step with the memory", folder)

    def _told(self, session: Session, pair: object) -> None:
        record_id, text = cast(tuple[str, str], pair)
        self.changed(session, WHO, record_id, text)

    def _report(self, line: object) -> None:
        self.broadcast(Notice(text=str(line), level="warning"))

    async def close(self) -> None:
        for unlisten in self._unlisten:
            unlisten()
        if self.watch is not None:
            await asyncio.to_thread(self.watch.stop)
