"""Episodes: the records around a record in creation order, of its kind and close to it in
time (the turns around a conversation turn answer or explain it), and the share of their
relevance contextual retrieval adds to it."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from memory.mirror import RecordMirror
from memory.scoring import FloatArray
from memory.stream.config import MemoryConfig


class CreationOrder:
    """The mirror's records sorted by created_at (records created at the same moment in the
    order they were added: a batch keeps its order), and each record's place in that order.
    Kept in step with the mirror's created_us array (a new array object whenever records are
    added or loaded); appending newer records extends it without a new sort. ``order`` and
    ``rank`` are replaced together, so a reader never sees one without the other."""

    def __init__(self) -> None:
        empty = np.zeros(0, dtype=np.int64)
        self._state: tuple[NDArray[np.int64] | None, NDArray[np.int64], NDArray[np.int64]] = (
            None,
            empty,
            empty,
        )

    @property
    def order(self) -> NDArray[np.int64]:
        return self._state[1]

    @property
    def rank(self) -> NDArray[np.int64]:
        return self._state[2]

    def current(self, created: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """(order, rank) for ``created``."""
        self.update(created)
        _, order, rank = self._state
        return order, rank

    def update(self, created: NDArray[np.int64]) -> None:
        old, order, rank = self._state
        if created is old:
            return
        size = 0 if old is None else old.size
        tail = created[size:]
        if (
            old is not None
            and size
            and created.size > size
            and int(tail.min()) >= int(old.max())
            and np.array_equal(created[:size], old)
        ):
            added = np.argsort(tail, kind="stable").astype(np.int64)
            tail_rank = np.empty(tail.size, dtype=np.int64)
            tail_rank[added] = np.arange(size, created.size, dtype=np.int64)
            order = np.concatenate([order, added + size])
            rank = np.concatenate([rank, tail_rank])
        else:
            order = np.argsort(created, kind="stable").astype(np.int64)
            rank = np.empty(created.size, dtype=np.int64)
            rank[order] = np.arange(created.size, dtype=np.int64)
        self._state = (created, order, rank)


class Episodes:
    """Each mirror record's episode neighbours, from the mirror's creation times and kinds."""

    def __init__(self, mirror: RecordMirror) -> None:
        self._mirror = mirror
        # Records in creation order, and every record's episode neighbours, rebuilt lazily when
        # the mirror's layout changes (see _creation_order and _episode_neighbours).
        self._order_cache: CreationOrder | None = None
        self._neighbour_cache: tuple[tuple[int, int, float], NDArray[np.int32]] | None = None

    def _creation_order(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """(order, rank): mirror places sorted by creation, and each place's index in that."""
        if self._order_cache is None:
            self._order_cache = CreationOrder()
        return self._order_cache.current(self._mirror.created_us)

    def _episode_neighbours(self, config: MemoryConfig) -> NDArray[np.int32]:
        """For every mirror record, the places of the records 1..context_radius steps before
        (side 0) and after (side 1) it in creation order, shape (radius, 2, records); the
        number of records (one past the last place) where there is none in its episode (same
        kind, created within context_gap_seconds)."""
        radius = max(config.context_radius, 0)
        key = (self._mirror.layout_version, radius, config.context_gap_seconds)
        if self._neighbour_cache is not None and self._neighbour_cache[0] == key:
            return self._neighbour_cache[1]
        count = len(self._mirror)
        near = np.full((radius, 2, count), count, dtype=np.int32)
        if count:
            order, rank = self._creation_order()
            created, kind = self._mirror.created_us, self._mirror.kind
            gap = int(config.context_gap_seconds * 1_000_000)
            last = count - 1
            for distance in range(1, radius + 1):
                for side, step in enumerate((-distance, distance)):
                    target = rank + step
                    other = order[np.clip(target, 0, last)]
                    keep = (
                        (target >= 0)
                        & (target <= last)
                        & (np.abs(created[other] - created) <= gap)
                        & (kind[other] == kind)
                    )
                    near[distance - 1, side] = np.where(keep, other, count)
        self._neighbour_cache = (key, near)
        return near

    def neighbours(
        self,
        positions: NDArray[np.int64],
        config: MemoryConfig,
        allowed: NDArray[np.bool_] | None = None,
    ) -> NDArray[np.int64]:
        """The episode neighbours (see _episode_neighbours) of the records at ``positions``,
        shape (radius, 2, len(positions)); -1 where there is none, or where the filters
        (``allowed``) leave it out."""
        count = len(self._mirror)
        near = self._episode_neighbours(config)[:, :, positions].astype(np.int64)
        keep = near < count
        if allowed is not None:
            keep &= np.append(allowed, False)[near]
        return np.where(keep, near, -1)

    def with_context(
        self, values: FloatArray, positions: NDArray[np.int64], config: MemoryConfig
    ) -> FloatArray:
        """values[i] + sum over d of context_weight ** d * the larger of the values of the
        records d places before and after record i in its episode (a neighbour that is not
        among ``positions`` adds nothing; values are never negative)."""
        weight, radius = config.context_weight, config.context_radius
        if weight <= 0 or radius <= 0 or positions.size == 0:
            return values
        count = len(self._mirror)
        table = self._episode_neighbours(config)
        # Over every record at once when most are wanted; else only the wanted ones' columns.
        whole = 2 * positions.size > count
        # float32 halves the memory the gathers below touch; the extra slot: "no neighbour".
        dense = np.zeros(count + 1, dtype=np.float32)
        dense[positions] = values
        extra = np.zeros(count if whole else positions.size, dtype=np.float32)
        for distance in range(radius):
            before, after = table[distance] if whole else table[distance][:, positions]
            extra += weight ** (distance + 1) * np.maximum(dense[before], dense[after])
        smoothed: FloatArray = values + (extra[positions] if whole else extra)
        return smoothed
