"""One writer at a time, across threads and processes, with a clear message when it is held."""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

POLL_SECONDS = 0.02


class LockTimeout(Exception):
    """Another writer held the lock for longer than the caller would wait."""


class WriteLock:
    """An exclusive lock: a thread lock inside the process, ``flock`` between processes.

    ``flock`` alone does not exclude threads that share one open file, hence both.
    """

    def __init__(self, path: Path, timeout_s: float = 30.0) -> None:
        self.path = path
        self.timeout_s = timeout_s
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._handle: int | None = None

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        if not self._thread_lock.acquire(timeout=self.timeout_s):
            raise LockTimeout(f"{self.path} is busy in this process")
        try:
            if self._depth == 0:
                self._acquire_file()
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._release_file()
        finally:
            self._thread_lock.release()

    def _acquire_file(self) -> None:
        handle = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = _read_holder(handle)
                    os.close(handle)
                    raise LockTimeout(
                        f"{self.path} is held by another process{holder} for over "
                        f"{self.timeout_s:g} s"
                    ) from None
                time.sleep(POLL_SECONDS)
        os.ftruncate(handle, 0)
        os.pwrite(handle, str(os.getpid()).encode(), 0)
        self._handle = handle

    def _release_file(self) -> None:
        if self._handle is not None:
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            os.close(self._handle)
            self._handle = None


def _read_holder(handle: int) -> str:
    try:
        pid = os.pread(handle, 32, 0).decode().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""
