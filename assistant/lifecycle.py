"""Process lifecycle: make every way of being told to stop unwind through ``finally`` blocks."""

from __future__ import annotations

import signal
from types import FrameType


def exit_cleanly_on_signals() -> None:
    """SIGTERM and SIGHUP raise SystemExit, so atexit handlers and ``finally`` blocks run."""

    def raise_exit(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, raise_exit)
    signal.signal(signal.SIGHUP, raise_exit)
