"""The window's connection to the service, shared by its screens.

The conversation screen attaches and reads every update; requests that carry a ``ref`` (the
memory screen's) get their answer back here as the awaited value of :meth:`ServiceLink.ask`,
and memory changes made anywhere are published on :attr:`ServiceLink.memory_changed`.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import TypeVar

from textual.dom import DOMNode
from textual.signal import Signal

from assistant.clients.connection import ServiceClient, ServiceError
from assistant.protocol import Update
from assistant.protocol.common import Answer, Failed, Wire
from assistant.protocol.memory import MemoryChangedByUser, MemoryStats
from assistant.protocol.tasks import Tasks

# How long a request waits for its answer (a search at a million memories takes ~0.3 s).
ANSWER_TIMEOUT_S = 30.0

A = TypeVar("A", bound=Answer)


class LinkError(Exception):
    """The request was not carried out; the message says why, in one line."""


class ServiceLink:
    def __init__(self, owner: DOMNode) -> None:
        self.client: ServiceClient | None = None
        self.stats: MemoryStats | None = None
        # Published for every change to a memory, by this window or another client.
        self.memory_changed: Signal[MemoryChangedByUser] = Signal(owner, "memory-changed")
        self.stats_changed: Signal[MemoryStats] = Signal(owner, "memory-stats")
        self.tasks: Signal[Tasks] = Signal(owner, "tasks")
        self._waiting: dict[str, asyncio.Future[Answer]] = {}

    async def send(self, request: Wire) -> None:
        """Send a request that has no answer of its own."""
        if self.client is None:
            raise LinkError("not connected to the Brain OS service")
        try:
            await self.client.send(request)
        except ServiceError as error:
            raise LinkError(str(error)) from None

    async def ask(self, request: Wire, expected: type[A], timeout_s: float = ANSWER_TIMEOUT_S) -> A:
        """Send ``request`` (which has a ``ref``, filled in here) and wait for its answer."""
        client = self.client
        if client is None:
            raise LinkError("not connected to the Brain OS service")
        ref = uuid.uuid4().hex
        waiting: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._waiting[ref] = waiting
        try:
            await client.send(request.model_copy(update={"ref": ref}))
            answer = await asyncio.wait_for(waiting, timeout_s)
        except ServiceError as error:
            raise LinkError(str(error)) from None
        except TimeoutError:
            raise LinkError(f"the service did not answer in {timeout_s:.0f} s") from None
        finally:
            self._waiting.pop(ref, None)
        if isinstance(answer, Failed):
            raise LinkError(answer.text)
        if not isinstance(answer, expected):
            raise LinkError(f"unexpected answer from the service: {answer.type}")
        return answer

    def take(self, update: Update) -> bool:
        """Deal with ``update`` if it is for this link (True), else leave it to the caller."""
        match update:
            case Answer():  # an answer, or Failed
                waiting = self._waiting.get(update.ref)
                if waiting is not None and not waiting.done():
                    waiting.set_result(update)
                return True
            case MemoryChangedByUser():
                self.memory_changed.publish(update)
                return True
            case MemoryStats():
                self.stats = update
                self.stats_changed.publish(update)
                return True
            case Tasks():
                self.tasks.publish(update)
                return True
        return False

    def lost(self, reason: str) -> None:
        """The connection closed: every request still waiting fails with ``reason``."""
        self.client = None
        for waiting in self._waiting.values():
            if not waiting.done():
                waiting.set_result(Failed(ref="", text=reason))
