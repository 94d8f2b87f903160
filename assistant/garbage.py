"""Short garbage-collector pauses in the long-running processes (the service, the window).

A full collection walks every object the process holds: in the service or the terminal app
that is 110,000-170,000 objects, most of them imported modules, classes and functions, and
it takes 60-200 ms on 2 cores, long enough to stall a reply, a search or a key. Once a process
is up, nearly all of those live as long as it does, so they are collected once and frozen out
of later collections (refcounting still frees any of them that is dropped).
"""

from __future__ import annotations

import gc


def settle_garbage() -> None:
    """Collect once, then leave every object alive now out of later full collections."""
    gc.collect()
    gc.freeze()


def unsettle_garbage() -> None:
    """Let the collector see the frozen objects again (a window or service in a process that
    goes on, as in tests, when it closes)."""
    gc.unfreeze()
