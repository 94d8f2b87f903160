"""What a typed message's last word costs: the memory lines its final draft shows that the
draft before it did not, read by the server after that word, and whether the memories best for
the whole message are shown at all. No LLM: the turn benchmark's conversation, typed word by
word, over its memory of 1,000 records (really embedded, retrieved as the agent retrieves).

    python -m benchmarks.draft_memories [--memories 1000] [--json]

Designs (each draft is taken as read before the next word comes):
* ``carried`` (the app's, ``assistant/agent/draft_memories.py``): a draft shows first the
  memories the draft before showed while each is still among the 10 best, then its own best;
* ``kept+N``: every line a draft showed stays and each draft adds at most N of its 5 best not
  yet shown, at most ``cap`` lines in all (``kept+N`` unbounded when no cap is given).

Per design: ``last_word_tokens`` (the changed lines and the message, estimated tokens;
{"p50", "p95", "max"} over the messages, and its ratio to ``carried``), ``top3_shown`` (the
share of the whole message's 3 best memories that its final draft shows) and ``lines`` (the
mean number of memory lines the message ends up showing, all of which stay in the
conversation's window).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.stats import percentiles
from benchmarks.turn import CONVERSATION, build_memory

# (memories shown with the draft before, or None at the first word; the draft's text) -> shown
Design = Callable[[Sequence[Any] | None, str], list[Any]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        results = measure(Path(folder), args.memories)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for name, figures in results.items():
        tokens = figures["last_word_tokens"]
        print(
            f"{name:18} last word reads {tokens['p50']:.0f} / {tokens['p95']:.0f} / "
            f"{tokens['max']:.0f} tokens ({figures['ratio_to_carried']:.2f}x), "
            f"top 3 shown {figures['top3_shown']:.2f}, {figures['lines']:.1f} lines"
        )


def measure(folder: Path, memories: int) -> dict[str, dict[str, Any]]:
    from assistant.agent.draft_memories import DraftMemories
    from assistant.agent.turn import AgentConfig
    from benchmarks.retrieval_scale import real_embedder
    from memory.database import open_database
    from memory.locking import WriteLock
    from memory.stream import MemoryStream

    build_memory(folder, memories)
    stream = MemoryStream(open_database(folder), WriteLock(folder / "memory.lock"), real_embedder())
    weights = AgentConfig().retrieval_weights
    wanted = AgentConfig().retrieved_memories
    ranked: dict[tuple[str, int], list[Any]] = {}

    def rank(text: str, k: int) -> list[Any]:
        if (text, k) not in ranked:
            found = stream.retrieve(text, k=k, weights=weights, touch=False)
            ranked[text, k] = [m.record for m in found]
        return ranked[text, k]

    def carried() -> Design:
        drafts = DraftMemories(wanted)
        return lambda _, text: list(drafts.for_draft(text, frozenset(), rank))

    def kept(new: int, cap: int | None) -> Design:
        def design(before: Sequence[Any] | None, text: str) -> list[Any]:
            if before is None:
                return rank(text, wanted)
            shown = {record.id for record in before}
            room = new if cap is None else min(new, max(0, cap - len(before)))
            return [*before, *[r for r in rank(text, wanted) if r.id not in shown][:room]]

        return design

    designs: dict[str, Callable[[], Design]] = {
        "carried": carried,
        "kept+1, cap 7": lambda: kept(1, wanted + 2),
        "kept+2, cap 10": lambda: kept(2, 2 * wanted),
        "kept+2": lambda: kept(2, None),
        "kept+1": lambda: kept(1, None),
    }
    results = {name: typed(make, rank, wanted) for name, make in designs.items()}
    stream.close()
    base = results["carried"]["last_word_tokens"]["p50"]
    for figures in results.values():
        figures["ratio_to_carried"] = figures["last_word_tokens"]["p50"] / base
    return results


def typed(
    make: Callable[[], Design], rank: Callable[[str, int], list[Any]], wanted: int
) -> dict[str, Any]:
    from assistant.agent.tools import describe_memory
    from assistant.llm.tokens import estimate_tokens

    last_word, top3, lines = [], [], []
    for message in CONVERSATION:
        design = make()
        words = message.split()
        shown: list[Any] = []
        changed: list[Any] = []
        for end in range(1, len(words) + 1):
            now = design(shown if end > 1 else None, " ".join(words[:end]))
            pairs = zip(now, shown, strict=False)
            same = next((i for i, (a, b) in enumerate(pairs) if a.id != b.id), len(shown))
            changed, shown = now[same:], now
        last_word.append(
            sum(estimate_tokens(describe_memory(r)) + 1 for r in changed) + estimate_tokens(message)
        )
        best = {record.id for record in rank(message, wanted)[:3]}
        top3.append(len(best & {record.id for record in shown}) / len(best))
        lines.append(len(shown))
    return {
        "last_word_tokens": percentiles(last_word),
        "top3_shown": statistics.mean(top3),
        "lines": statistics.mean(lines),
    }


if __name__ == "__main__":
    main()
