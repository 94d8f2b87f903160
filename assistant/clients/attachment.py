"""A long-lived client's attachment to the service (the MCP server's): attached on first use,
starting the service if none runs; every update read as it comes, so nothing piles up in
the service for a client that only asks now and then; attached again after the service
went away (``brain stop``, a restart)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from assistant.clients.answers import ANSWER_TIMEOUT_S, A, AnswerError, Answers
from assistant.clients.connection import ServiceClient, ServiceError
from assistant.protocol.common import Answer, Wire
from assistant.protocol.conversation import Bye


class Attachment:
    def __init__(self, connect: Callable[[], Awaitable[ServiceClient]]) -> None:
        """``connect`` attaches to the service (starting it if needed)."""
        self.connect = connect
        self._lock = asyncio.Lock()
        self._attached: tuple[ServiceClient, Answers] | None = None
        self._reader: asyncio.Task[None] | None = None

    async def ask(self, request: Wire, expected: type[A], timeout_s: float = ANSWER_TIMEOUT_S) -> A:
        """Send ``request`` and wait for its answer; AnswerError says in one line why not."""
        client, answers = await self._attach()
        return await answers.ask(client, request, expected, timeout_s)

    async def close(self) -> None:
        """Leave the service (it stops if nobody else needs it)."""
        async with self._lock:
            attached, self._attached = self._attached, None
            if self._reader is not None:
                self._reader.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._reader
            if attached is not None:
                await attached[0].leave()

    async def _attach(self) -> tuple[ServiceClient, Answers]:
        async with self._lock:
            if self._attached is None:
                try:
                    client = await self.connect()
                except ServiceError as error:
                    raise AnswerError(str(error)) from None
                self._attached = client, Answers()
                self._reader = asyncio.create_task(self._read(*self._attached))
            return self._attached

    async def _read(self, client: ServiceClient, answers: Answers) -> None:
        reason = "the service closed the connection"
        try:
            async for update in client.updates():
                if isinstance(update, Answer):
                    answers.take(update)
                elif isinstance(update, Bye):
                    reason = f"the service stopped ({update.reason})"
        except ServiceError as error:
            reason = str(error)
        finally:
            # Requests under way fail; the next one attaches afresh.
            if self._attached is not None and self._attached[0] is client:
                self._attached = None
            answers.lost(reason)
        await client.close()
