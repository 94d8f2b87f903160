"""The draft-memories benchmark's counting, on a ranking made by hand."""

from __future__ import annotations

from datetime import datetime
from types import SimpleNamespace
from typing import Any

from assistant.llm.tokens import estimate_tokens
from benchmarks.draft_memories import typed
from benchmarks.stats import percentiles
from benchmarks.turn import CONVERSATION

WHEN = datetime(2026, 11, 26)


def memory(name: str) -> Any:
    return SimpleNamespace(id=name, text=f"memory {name}", created_at=WHEN)


def by_last_word(text: str, k: int) -> list[Any]:
    """Each draft's best memories depend on its last word only: every word changes them."""
    word = text.split()[-1]
    return [memory(f"{word}-{n}") for n in range(k)]


def test_a_design_that_keeps_its_lines_reads_only_the_message_at_the_last_word() -> None:
    def steady(before: Any, text: str) -> list[Any]:
        return list(before) if before is not None else by_last_word(text, 5)

    figures = typed(lambda: steady, by_last_word, 5)
    messages = percentiles([estimate_tokens(message) for message in CONVERSATION])
    assert figures["last_word_tokens"] == messages, "the lines were read with the first word"
    assert figures["top3_shown"] == 0, "the first word's memories are not the message's"
    assert figures["lines"] == 5


def test_a_design_that_follows_the_ranking_reads_its_lines_again_and_shows_the_best() -> None:
    figures = typed(lambda: lambda _, text: by_last_word(text, 5), by_last_word, 5)
    assert figures["top3_shown"] == 1.0
    assert figures["last_word_tokens"]["p50"] > 5 * estimate_tokens("- (2026-11-26) memory x-0")
