"""Where the service listens, and the lock that makes it the only owner of a data folder.

The socket lives in the user's runtime folder (mode 0700) and is itself mode 0600: no other
local user can connect. Its name comes from the data folder, so two data folders (a test's and
the user's) get two services, and one data folder never gets two.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import stat
import tempfile
import time
from pathlib import Path

from assistant.settings import APP_NAME, Settings


class ServicePathError(Exception):
    """The runtime folder is missing, not ours, or open to other users."""


def runtime_dir(settings: Settings) -> Path:
    if settings.service.runtime_dir is not None:
        return settings.service.runtime_dir
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and Path(xdg).is_dir():
        return Path(xdg) / APP_NAME
    return Path(tempfile.gettempdir()) / f"{APP_NAME}-{os.getuid()}"


def socket_path(settings: Settings) -> Path:
    """The socket of the service for ``settings.data_dir`` (short: sockets have a length cap)."""
    key = hashlib.sha256(str(settings.data_dir.expanduser().resolve()).encode()).hexdigest()
    return runtime_dir(settings) / f"brain-{key[:12]}.sock"


def private_dir(path: Path) -> Path:
    """Create ``path`` as mode 0700, or check that the existing one is ours and private."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.stat()
    if info.st_uid != os.getuid():
        raise ServicePathError(f"{path} belongs to another user; set service.runtime_dir")
    if stat.S_IMODE(info.st_mode) & 0o077:
        path.chmod(0o700)
    return path


class OwnerLock:
    """An exclusive ``flock`` on ``<data folder>/service.lock`` while the service runs.

    Whoever holds it owns the socket too: a socket file found while holding the lock was left
    by a service that died, and is removed.
    """

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / "service.lock"
        self._handle: int | None = None

    def acquire(self, wait_s: float = 0.0) -> bool:
        """True if this process now owns the data folder; False if a service still does
        after ``wait_s`` (one that is shutting down lets go within seconds)."""
        handle = self._lock(wait_s)
        if handle is None:
            return False
        os.ftruncate(handle, 0)
        os.write(handle, f"{os.getpid()}\n".encode())
        self._handle = handle
        return True

    def wait_free(self, timeout_s: float) -> bool:
        """Wait until no service owns the folder (True), or ``timeout_s`` passes."""
        handle = self._lock(timeout_s)
        if handle is None:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        os.close(handle)
        return True

    def wait_left_by(self, pid: int, timeout_s: float) -> bool:
        """Wait until the service ``pid`` no longer owns the folder (True): it is free, or
        another service took it over (one started meanwhile waits for it); False after
        ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while self.holder() == pid:
            if self.wait_free(0.0):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def _lock(self, wait_s: float) -> int | None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return handle
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(handle)
                    return None
                time.sleep(0.05)

    def holder(self) -> int | None:
        """The process id written by the owner, if any."""
        try:
            return int(self.path.read_text(encoding="utf-8").strip() or 0) or None
        except (OSError, ValueError):
            return None

    def release(self) -> None:
        if self._handle is not None:
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            os.close(self._handle)
            self._handle = None
