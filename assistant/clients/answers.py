"""Requests that carry a ``ref``, waiting for their answers while one reader takes every
update from the service: for clients that send several at once over one connection (the
terminal app's screens, ui/link.py; ``brain mcp``, attachment.py)."""

from __future__ import annotations

import asyncio
import uuid
from typing import TypeVar

from assistant.clients.connection import ServiceClient, ServiceError
from assistant.protocol.common import Answer, Failed, Wire

# How long a request waits for its answer (a search at a million memories takes ~0.3 s; a
# request sent while the memory opens waits for it).
ANSWER_TIMEOUT_S = 30.0

A = TypeVar("A", bound=Answer)


class AnswerError(Exception):
    """The request was not carried out; the message says why, in one line."""


class Answers:
    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[Answer]] = {}

    async def ask(
        self,
        client: ServiceClient,
        request: Wire,
        expected: type[A],
        timeout_s: float = ANSWER_TIMEOUT_S,
    ) -> A:
        """Send ``request`` (which has a ``ref``, filled in here) and wait until the reader
        hands its answer to :meth:`take`."""
        ref = uuid.uuid4().hex
        waiting: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._waiting[ref] = waiting
        try:
            await client.send(request.model_copy(update={"ref": ref}))
            answer = await asyncio.wait_for(waiting, timeout_s)
        except ServiceError as error:
            raise AnswerError(str(error)) from None
        except TimeoutError:
            raise AnswerError(f"the service did not answer in {timeout_s:.0f} s") from None
        finally:
            self._waiting.pop(ref, None)
        if isinstance(answer, Failed):
            raise AnswerError(answer.text)
        if not isinstance(answer, expected):
            raise AnswerError(f"unexpected answer from the service: {answer.type}")
        return answer

    def take(self, answer: Answer) -> None:
        """The answer to one of the requests sent (an answer nobody waits for is dropped)."""
        waiting = self._waiting.get(answer.ref)
        if waiting is not None and not waiting.done():
            waiting.set_result(answer)

    def lost(self, reason: str) -> None:
        """The connection closed: every request still waiting fails with ``reason``."""
        for waiting in self._waiting.values():
            if not waiting.done():
                waiting.set_result(Failed(ref="", text=reason))
