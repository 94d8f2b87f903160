"""The background server paused while the user is at it.

At idle priority the background server still held cores a turn needed: a request it had been
told to abandon went on reading its prompt for seconds (llama.cpp reads a prompt to its end),
and work it started while the user typed or spoke ran beside the words being read ahead and
transcribed. Paused (SIGSTOP, through its watchdog: server_child.py) it takes no core at all.
It is paused while a reply is under way (the foreground gate) and for ``PRESENCE_S`` after the
last sign of the user (a word heard, a draft typed), and resumed once neither holds. Urgent
work (the window's summary, ``ForegroundGate.urgent``) is not held back by the user's
presence, only by replies: paused for every sign of a user who typed message after message, a
summary waited minutes, and every turn meanwhile read a prompt twice as long. Background
requests sent meanwhile wait in the server's socket and are answered when it resumes; nothing
is dropped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

# How long after the last word heard or typed the user counts as still at it (speech is
# transcribed every second, drafts come as the user types).
PRESENCE_S = 3.0


class BackgroundPause:
    """Feed it the gate's changes (``foreground``) and the user's signs (``user_active``); it
    calls ``pause(True)`` when the background server should stop and ``pause(False)`` when it
    may go on."""

    def __init__(
        self,
        pause: Callable[[bool], None],
        presence_s: float = PRESENCE_S,
        clock: Callable[[], float] = time.monotonic,
        urgent: Callable[[], bool] = lambda: False,
    ) -> None:
        """``urgent``: whether urgent background work is under way (then presence does not
        pause the server; ``foreground`` is called again when it changes)."""
        self._pause = pause
        self._urgent = urgent
        self._presence_s = presence_s
        self._clock = clock
        self._lock = threading.Lock()
        self._busy = False
        self._until = 0.0
        self._paused = False
        self._timer: threading.Timer | None = None
        self._closed = False

    @property
    def paused(self) -> bool:
        return self._paused

    def foreground(self, busy: bool) -> None:
        """Whether a reply now holds the cores (``ForegroundGate``: one is under way and is
        not itself waiting on background work)."""
        with self._lock:
            self._busy = busy
            self._update()

    def user_active(self) -> None:
        """The user is speaking or typing now."""
        with self._lock:
            self._until = self._clock() + self._presence_s
            self._update()

    def close(self) -> None:
        """Resume for good (the service is closing)."""
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            self._set(False)

    def _update(self) -> None:
        if self._closed:
            return
        present = self._clock() < self._until and not self._urgent()
        self._set(self._busy or present)
        if present and not self._busy and self._timer is None:
            self._timer = threading.Timer(self._until - self._clock(), self._recheck)
            self._timer.daemon = True
            self._timer.start()

    def _recheck(self) -> None:
        with self._lock:
            self._timer = None
            self._update()

    def _set(self, paused: bool) -> None:
        if paused == self._paused:
            return
        self._paused = paused
        log.info(
            "background server %s (reply %s, user present %s, urgent work %s)",
            "paused" if paused else "resumed",
            self._busy,
            self._clock() < self._until,
            self._urgent(),
        )
        try:
            self._pause(paused)
        except OSError as error:  # the server is gone: its watchdog resumes nothing
            log.warning(
                "could not %s the background server: %s", "pause" if paused else "resume", error
            )
