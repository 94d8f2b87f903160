"""Running the assistant service inside a test: in-process on its own loop, and waiting for
what its clients receive."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable

from assistant.clients.connection import ServiceClient
from assistant.protocol import Update
from assistant.protocol.common import Wire
from assistant.service.server import AssistantService


def action(message: str) -> str:
    return json.dumps(
        {"tool": "send_message", "arguments": {"message": message}, "request_heartbeat": False}
    )


class InProcess:
    """A service on its own event loop in a thread, as `brain serve` runs it."""

    def __init__(self, service: AssistantService) -> None:
        self.service = service
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        if not service.ready.wait(30):
            raise AssertionError(f"the service did not start listening: {self.error}")

    def _run(self) -> None:
        try:
            asyncio.run(self.service.serve())
        except BaseException as error:  # reported by the test
            self.error = error

    def stopped(self, timeout: float = 30) -> bool:
        self.thread.join(timeout)
        return not self.thread.is_alive()

    def stop(self) -> None:
        loop = self.service.jobs.loop
        if self.thread.is_alive() and loop is not None:
            loop.call_soon_threadsafe(self.service.stop, "test over")
        assert self.stopped(), "the service did not stop"


async def until(
    client: ServiceClient, wanted: Callable[[Update], bool], timeout: float = 30
) -> list[Update]:
    """Every update up to and including the first ``wanted`` one."""
    seen: list[Update] = []
    async with asyncio.timeout(timeout):
        async for update in client.updates():
            seen.append(update)
            if wanted(update):
                return seen
    raise AssertionError(f"the connection closed before the wanted update; saw {seen}")


async def ask(client: ServiceClient, request: Wire) -> Update:
    """Send a request with a ref; the answer with that ref."""
    ref = request.ref
    await client.send(request)
    seen = await until(client, lambda u: getattr(u, "ref", None) == ref)
    return seen[-1]
