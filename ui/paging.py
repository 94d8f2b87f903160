"""What the list screens (memories, entities) share: a search that waits for typing to pause,
and moving between pages."""

from __future__ import annotations

from collections.abc import Callable

from textual.message_pump import MessagePump
from textual.timer import Timer

# Typing pauses this long before the search runs (each keystroke is shown at once).
SEARCH_PAUSE_S = 0.15


class TypingPause:
    """Calls ``callback`` once ``seconds`` pass without another :meth:`restart`."""

    def __init__(self, owner: MessagePump, callback: Callable[[], None]) -> None:
        self._owner = owner
        self._callback = callback
        self._timer: Timer | None = None

    def restart(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        self._timer = self._owner.set_timer(SEARCH_PAUSE_S, self._callback)


def page_after(page: int, step: int, total: int, page_size: int) -> int:
    """The page ``step`` pages from ``page``, kept within the pages ``total`` rows fill."""
    pages = max(1, -(-total // page_size))
    return min(max(1, page + step), pages)
