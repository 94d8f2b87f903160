"""The service's event loop as its parts reach it: coroutines run in the background and are
kept until done, and handlers are called on the loop from other threads."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from typing import Any

Spawn = Callable[[Coroutine[Any, Any, None]], None]
FromThread = Callable[[Callable[[object], None]], Callable[[object], None]]


class Jobs:
    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self._running: set[asyncio.Task[None]] = set()

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop the service runs on (known once it serves)."""
        self.loop = loop

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        # Tracked, so the task is not collected before it has run.
        task = asyncio.create_task(work)
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    def from_thread(self, handler: Callable[[object], None]) -> Callable[[object], None]:
        def call(value: object) -> None:
            if self.loop is not None and not self.loop.is_closed():
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    self.loop.call_soon_threadsafe(handler, value)

        return call
