"""Work a turn must do but the reply need not wait for: the memory-stream record of the
user's message (its embedding, the near-copy check, the importance rating queued). It starts
once the model's first token has arrived, so it never delays the prompt being read, and is
finished before anything else writes to the stores, so writes keep their order."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Deferred(Generic[T]):
    """``work`` run once on its own thread, from ``start`` (or from ``result`` at the latest);
    an exception it raises is raised again by ``result``, as if it had run there."""

    def __init__(self, work: Callable[[], T]) -> None:
        self._work = work
        self._result: T | None = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._started = threading.Lock()

    def start(self) -> None:
        with self._started:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="deferred", daemon=True)
                self._thread.start()

    def result(self) -> T | None:
        """What ``work`` returned, once it has run (started now if it had not been)."""
        self.start()
        assert self._thread is not None
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._result

    def _run(self) -> None:
        try:
            self._result = self._work()
        except BaseException as error:  # handed to whoever waits for the result
            self._error = error
