"""The memory between the store and the clients: the memory screen's requests answered in
worker threads (a change told to every client and, before its next turn, to the agent), and
the memory's counters for the clients' status bars."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from assistant.agent.events import MemoryChanged
from assistant.agent.tools import Stores
from assistant.protocol.common import Failed, Wire
from assistant.protocol.memory import MemoryChangedByUser, MemoryStats
from assistant.service.desks import graph as graph_desk
from assistant.service.desks import memory as memory_desk
from assistant.service.desks.common import MEMORY_ERRORS, Reply, one_line
from assistant.service.desks.memory import MemoryDesk
from assistant.service.hub import Client
from assistant.service.jobs import Spawn
from assistant.service.requests import Requests
from assistant.service.session import Opening, Session

log = logging.getLogger(__name__)

# How often the memory's counters are checked for the clients' status bars.
STATS_POLL_S = 1.0


class MemoryRelay:
    def __init__(
        self,
        opening: Opening,
        broadcast: Callable[[Wire], None],
        spawn: Spawn,
        note: Callable[[MemoryChanged], None],
        state_text: Callable[[], str],
        attached: Callable[[], bool],
    ) -> None:
        """``note`` tells the agent before its next turn; ``state_text`` says why the memory
        is not open; ``attached``: some client is attached."""
        self.opening = opening
        self.broadcast = broadcast
        self.spawn = spawn
        self.note = note
        self.state_text = state_text
        self.attached = attached
        self._stats_sent: MemoryStats | None = None

    def register(self, requests: Requests) -> None:
        memory_desk.register(requests, self._in_worker)
        graph_desk.register(requests, self._in_worker)

    def _in_worker(self, answer: Callable[[Stores, Any], Reply]) -> Callable[[Client, Any], None]:
        return lambda client, request: self.spawn(self._request(client, request, answer))

    async def _request(
        self, client: Client, request: Any, answer: Callable[[Stores, Any], Reply]
    ) -> None:
        """Answer a memory request in a worker thread (a reply being written does not hold it
        up); a change is told to every client and, before its next turn, to the agent."""
        session = await self.opening.wait()
        if session is None:
            text = f"the memory is not open: {self.state_text()}"
            client.send(Failed(ref=request.ref, text=text))
            return
        try:
            reply, changed = await asyncio.to_thread(answer, session.stores, request)
        except MEMORY_ERRORS as error:
            client.send(Failed(ref=request.ref, text=one_line(error)))
            return
        client.send(reply)
        if changed is not None:
            self.changed(session, client.name, *changed)

    def changed(self, session: Session, who: str, record_id: str, text: str) -> None:
        """``who`` changed a memory for the user (on screen, in the vault): every client is
        told, and the agent before its next turn."""
        log.info("%s %s", who, text)
        self.broadcast(MemoryChangedByUser(id=record_id, text=text))
        self.broadcast_stats()
        self.note(MemoryChanged(text))
        session.plan(f"the user {text}")

    async def watch(self) -> None:
        """Tell clients when the memory count or its background work changes (ratings done,
        a reflection started or stored): cheap, from in-memory counters."""
        while True:
            await asyncio.sleep(STATS_POLL_S)
            if self.attached():
                self.broadcast_stats(only_if_changed=True)

    def stats(self) -> MemoryStats | None:
        session = self.opening.session
        if session is None:
            return None
        return MemoryDesk(session.stores).stats(session.reflecting())

    def broadcast_stats(self, only_if_changed: bool = False) -> None:
        stats = self.stats()
        if stats is not None and not (only_if_changed and stats == self._stats_sent):
            self._stats_sent = stats
            self.broadcast(stats)
