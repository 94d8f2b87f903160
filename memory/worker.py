"""A daemon thread that does one kind of background memory work (reflection, learning the
knowledge graph) whenever it is poked or ``interval_s`` passes, so it never holds up a reply."""

from __future__ import annotations

import logging
import threading
from abc import ABC, abstractmethod

log = logging.getLogger(__name__)


class BackgroundWorker(ABC):
    """Subclasses define :meth:`work` and call :meth:`start` once they are set up."""

    def __init__(self, name: str, interval_s: float = 60.0) -> None:
        self._interval_s = interval_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    @abstractmethod
    def work(self, stop: threading.Event) -> None:
        """One pass of the work; ``stop`` is set on close, to give up early."""

    def poke(self) -> None:
        """Do the work now (e.g. after new records were added)."""
        with self._lock:
            self._idle.clear()
            self._wake.set()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """True once no work is running or asked for."""
        return self._idle.wait(timeout)

    def close(self, timeout: float = 30.0) -> None:
        """Ask the work in progress to stop and wait for the thread to end."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._wake.wait(self._interval_s)
                with self._lock:
                    self._wake.clear()
                    self._idle.clear()
                if self._stop.is_set():
                    return
                try:
                    self.work(self._stop)
                except Exception:  # the stores report their own errors; keep running
                    log.exception("%s failed", self._thread.name)
                with self._lock:
                    if not self._wake.is_set():
                        self._idle.set()
        finally:
            self._idle.set()
