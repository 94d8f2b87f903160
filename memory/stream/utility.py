"""Utility: what a memory has been worth in use, raised when it helped and lowered when it
misled, kept within bounds; retrieval weighs it as its fourth term (memory.scoring).

Who judges is outside the memory (the agent, a task, the user's screen): this module only
applies a verdict to a set of records. Not kept in the history: it is the assistant's own
running estimate, not a change anyone made, and undoing a user's edit or delete does not give
back what the correction cost (docs/MEMORY.md, "Utility").
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from memory.stream.config import MemoryConfig
from memory.stream.stored import StoredRecords


class UtilityKeeper:
    def __init__(self, stored: StoredRecords) -> None:
        self._stored = stored
        # The agent's turn and a task's end may judge the same memory at once: each reads the
        # value it adds to, so one waits for the other.
        self._lock = threading.Lock()

    def adjust(self, record_ids: Sequence[str], helped: bool, config: MemoryConfig) -> None:
        """Raise (``helped``) or lower the records' utility by ``config.utility_gain`` or
        ``utility_loss``, within +-``utility_bound``. Unknown ids are skipped: a verdict on a
        memory removed meanwhile has nothing left to change. Deleted records change too (a
        delete is itself a verdict, and a restore keeps it)."""
        step = config.utility_gain if helped else -config.utility_loss
        bound = config.utility_bound
        with self._lock:
            mirror = self._stored.mirror
            unique = list(dict.fromkeys(record_ids))
            positions = mirror.positions(unique)
            ids = [i for i, place in zip(unique, positions.tolist(), strict=True) if place >= 0]
            if not ids:
                return
            current = mirror.utility[positions[positions >= 0]]
            # The stored column is float32: the mirror keeps what the table will hand back.
            new = np.clip(current + step, -bound, bound).astype(np.float32).tolist()
            by_value: dict[float, list[str]] = {}
            for record_id, value in zip(ids, new, strict=True):
                by_value.setdefault(float(value), []).append(record_id)
            # One write per new value: the memories of one turn mostly move from the same one.
            for value, same in by_value.items():
                self._stored.write_many(same, {"utility": value})
