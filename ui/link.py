"""The window's connection to the service, shared by its screens.

The conversation screen attaches and reads every update; requests that carry a ``ref`` (the
memory screen's) get their answer back here as the awaited value of :meth:`ServiceLink.ask`,
and memory changes made anywhere are published on :attr:`ServiceLink.memory_changed`.
"""

from __future__ import annotations

from textual.dom import DOMNode
from textual.signal import Signal

from assistant.clients.answers import ANSWER_TIMEOUT_S, A, AnswerError, Answers
from assistant.clients.connection import ServiceClient, ServiceError
from assistant.protocol import Update
from assistant.protocol.common import Answer, Wire
from assistant.protocol.memory import MemoryChangedByUser, MemoryStats
from assistant.protocol.tasks import Tasks

# The screens' name for a request that was not carried out (one line).
LinkError = AnswerError


class ServiceLink:
    def __init__(self, owner: DOMNode) -> None:
        self.client: ServiceClient | None = None
        self.stats: MemoryStats | None = None
        # Published for every change to a memory, by this window or another client.
        self.memory_changed: Signal[MemoryChangedByUser] = Signal(owner, "memory-changed")
        self.stats_changed: Signal[MemoryStats] = Signal(owner, "memory-stats")
        self.tasks: Signal[Tasks] = Signal(owner, "tasks")
        self._answers = Answers()

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
        if self.client is None:
            raise LinkError("not connected to the Brain OS service")
        return await self._answers.ask(self.client, request, expected, timeout_s)

    def take(self, update: Update) -> bool:
        """Deal with ``update`` if it is for this link (True), else leave it to the caller."""
        match update:
            case Answer():  # an answer, or Failed
                self._answers.take(update)
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
        self._answers.lost(reason)
