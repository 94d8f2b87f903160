"""The memories shown with a message the user is still writing, kept steady from draft to
draft so the server's cache of them stays good.

Each draft (a pause in typing, a partial transcript) is read ahead by the conversation's server
with the memories retrieved for it, just before the draft itself. Retrieved afresh, the next
draft's memories differ a little (one more word moves the ranking), and everything from the
first changed line on is read again: about 150 tokens, over a second on two cores, so the read
ahead never caught up with the typing and the turn waited for it. Here a draft's memories start
with those the previous draft showed, as long as they are still among the best for the new
text, and only the new ones are added after them: the server reads a line or two and the
words, and the message, when it is sent, still shows all of its own best memories.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memory.records import MemoryRecord

# The best memories for a text, best first, those in view left out: (text, how many).
Ranking = Callable[[str, int], list[MemoryRecord]]
# How far down the ranking a memory already shown may be and still be kept, as a multiple of
# the memories wanted.
KEEP_WITHIN = 2


@dataclass(frozen=True)
class Prepared:
    """A draft read ahead, with the memories shown before it."""

    text: str
    # What the window showed when it was prepared: retrieval left those out.
    in_view: frozenset[str]
    shown: tuple[MemoryRecord, ...]


def carry(
    before: Sequence[MemoryRecord], ranked: Sequence[MemoryRecord], wanted: int
) -> list[MemoryRecord]:
    """The memories to show: the longest run at the head of ``before`` (what the server has
    read) whose every memory is still in ``ranked``, at most ``wanted`` of them, then the
    first ``wanted`` of ``ranked`` not among them."""
    still_good = {record.id for record in ranked}
    kept: list[MemoryRecord] = []
    for record in before:
        if record.id not in still_good or len(kept) == wanted:
            break
        kept.append(record)
    shown = {record.id for record in kept}
    return kept + [record for record in ranked[:wanted] if record.id not in shown]


class DraftMemories:
    """The memories of the drafts of one message, from its first draft until it is sent (or
    the window changes under it)."""

    def __init__(self, wanted: int) -> None:
        self.wanted = wanted
        self._prepared: Prepared | None = None

    def for_draft(
        self, text: str, in_view: frozenset[str], rank: Ranking
    ) -> tuple[MemoryRecord, ...]:
        """The memories to read ahead with the draft ``text``; remembered for the next."""
        carried = _carried(self._prepared, text, in_view, rank, self.wanted)
        shown = tuple(rank(text, self.wanted) if carried is None else carried)
        self._prepared = Prepared(text, in_view, shown)
        return shown

    def for_message(
        self, text: str, in_view: frozenset[str], rank: Ranking
    ) -> list[MemoryRecord] | None:
        """The memories to show with the message ``text`` as sent, carried from its drafts;
        None when no draft of it was read ahead in this window (retrieve as usual). The
        drafts are forgotten."""
        prepared, self._prepared = self._prepared, None
        return _carried(prepared, text, in_view, rank, self.wanted)


def _carried(
    prepared: Prepared | None, text: str, in_view: frozenset[str], rank: Ranking, wanted: int
) -> list[MemoryRecord] | None:
    if prepared is None or prepared.in_view != in_view:
        return None
    if prepared.text == text:
        return list(prepared.shown)
    return carry(prepared.shown, rank(text, KEEP_WITHIN * wanted), wanted)
