"""Who hears of a committed write: a store tells its feed the ids it changed once the write is
in, and every listener is called with them (ids only; a listener reads what it needs)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

log = logging.getLogger(__name__)

Listener = Callable[[list[str]], None]


class ChangeFeed:
    """Listeners are called in the writer's thread, so each must be quick (note the ids, wake a
    worker) and must not write to the store itself."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Add a listener; returns what removes it."""
        with self._lock:
            self._listeners.append(listener)

        def remove() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return remove

    def tell(self, ids: Iterable[str]) -> None:
        """The records (or, for the graph, the memories behind the facts) of ``ids`` changed;
        an empty list says only that something changed."""
        with self._lock:
            listeners = list(self._listeners)
        if not listeners:
            return
        changed = list(dict.fromkeys(ids))
        for listener in listeners:
            try:
                listener(changed)
            except Exception:  # a listener's fault must not fail the write that was made
                log.exception("a change listener failed")
