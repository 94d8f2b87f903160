"""Memories carried from draft to draft (draft_memories.py): what the server has read stays at
the head while it is still relevant, and the message always shows its own best memories."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from assistant.agent.draft_memories import KEEP_WITHIN, DraftMemories, carry
from memory.records import MemoryRecord

NOW = datetime(2026, 11, 25, tzinfo=UTC)


def memory(name: str) -> MemoryRecord:
    return MemoryRecord(
        id=name,
        text=f"memory {name}",
        kind="observation",
        created_at=NOW,
        last_accessed_at=NOW,
        importance=5,
        sources=(),
    )


A, B, C, D, E = (memory(name) for name in "abcde")


def names(records: Sequence[MemoryRecord] | None) -> str:
    assert records is not None
    return "".join(record.id for record in records)


def test_memories_still_ranked_stay_first_and_the_new_best_follow() -> None:
    assert names(carry([A, B], [C, B, A, D], wanted=2)) == "abc"


def test_the_head_is_kept_only_up_to_the_first_memory_no_longer_ranked() -> None:
    # B fell out of the ranking: C after it is read again anyway, so it is not kept either.
    assert names(carry([A, B, C], [D, C, A, E], wanted=2)) == "adc"


def test_nothing_kept_gives_exactly_the_ranking() -> None:
    assert names(carry([], [C, D, E], wanted=2)) == "cd"
    assert names(carry([A], [C, D, E], wanted=2)) == "cd"


def test_at_most_the_wanted_number_is_kept() -> None:
    assert names(carry([A, B, C], [A, B, C, D], wanted=2)) == "ab"


class Ranking:
    """The memories best for any text, in a fixed order; notes what it was asked."""

    def __init__(self, order: str) -> None:
        records = {record.id: record for record in (A, B, C, D, E)}
        self.order = [records[name] for name in order]
        self.asked: list[tuple[str, int]] = []

    def __call__(self, text: str, wanted: int) -> list[MemoryRecord]:
        self.asked.append((text, wanted))
        return self.order[:wanted]


def test_drafts_carry_their_memories_to_the_message_sent() -> None:
    drafts = DraftMemories(wanted=2)
    view = frozenset({"x"})
    assert names(drafts.for_draft("Where", view, Ranking("ab"))) == "ab"
    second = Ranking("cbad")
    assert names(drafts.for_draft("Where is", view, second)) == "abc"
    assert second.asked == [("Where is", KEEP_WITHIN * 2)]
    same = Ranking("e")
    assert names(drafts.for_message("Where is", view, same)) == "abc"
    assert same.asked == [], "sent as drafted: nothing retrieved again"
    assert drafts.for_message("Where is", view, same) is None, "the drafts are forgotten"


def test_a_changed_window_drops_what_the_drafts_showed() -> None:
    drafts = DraftMemories(wanted=2)
    drafts.for_draft("Where", frozenset(), Ranking("ab"))
    assert drafts.for_message("Where", frozenset({"a"}), Ranking("cd")) is None
    drafts.for_draft("Where", frozenset(), Ranking("ab"))
    assert names(drafts.for_draft("Where", frozenset({"a"}), Ranking("cd"))) == "cd"
