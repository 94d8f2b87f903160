"""Whether the knowledge graph keeps facts current: a fact, a later change, and a question about
now and one about then, for each case of ``benchmarks/data/fact_updates.json`` (32 cases); and
whether it keeps a fact that a later one adds to without changing it ("Ana likes jazz", then
"Ana has started to like rock too"), for each case of ``fact_additions.json`` (16 cases).

    python -m benchmarks.fact_updates [--data FILE] [--additions FILE] [--cases N]
                                      [--same-aspect X] [--json]

One graph learns every case, as a user would say them over weeks: first every case's
``before`` (a minute apart), then, 30 days later, every ``after`` (a minute apart), each stored
as a memory (real LanceDB, real embedder) and read by ``KnowledgeGraph.learn`` with the
configured LLM (the local model unless an endpoint is set). Then, per change:

* **current**: a graph search for the ``now`` question finds, among its first 5 facts, a
  current fact (no ``valid_until``) whose text holds the ``current`` word;
* **past found**: a graph search for the ``then`` question finds a fact whose text holds the
  ``past`` word, still holding or not (the old fact is still known);
* **past**: that fact is also marked as past (``valid_until`` set: the replacement step retired
  it), so the graph knows it no longer holds;
* **both**: current and past together;

and per addition:

* **kept**: a graph search for its ``question`` finds a current fact holding the ``kept`` word,
  and no fact holding it that was retired (a wrong replacement).

It prints the share of cases for each, the cases that failed (with what was found), and what
learning took: LLM calls and seconds, in all and per memory. ``--same-aspect`` sets the
learner's gate on how near two facts' relations must be for one to replace the other
(``memory.graph.graph.SAME_ASPECT``; 0: none). ``--json`` prints one object:
``{"cases", "current", "past_found", "past", "both", "additions", "kept", "llm_calls",
"seconds", "failures": [...]}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory.database import open_database
from memory.embedder import Embedder
from memory.graph.graph import SAME_ASPECT, KnowledgeGraph
from memory.graph.search import graph_search
from memory.graph.store import GraphStore, Triplet
from memory.llm import StructuredLLM
from memory.locking import WriteLock
from memory.stream import MemoryStream, NewMemory

DATA = Path(__file__).parent / "data" / "fact_updates.json"
ADDITIONS = Path(__file__).parent / "data" / "fact_additions.json"
FIRST_SAID = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
CHANGED_AFTER = timedelta(days=30)
# The "now" answer must be among this many of the search's facts (current ones come first).
CURRENT_WITHIN = 5


@dataclass(frozen=True)
class Case:
    before: str
    after: str
    now: str
    then: str
    current: str
    past: str


@dataclass(frozen=True)
class Addition:
    before: str
    after: str  # adds to ``before`` without changing it
    question: str
    kept: str  # a word of the fact ``before`` states, which must still hold


@dataclass(frozen=True)
class Outcome:
    case: Case
    current: bool
    past_found: bool
    past: bool
    found_now: tuple[str, ...]
    found_then: tuple[str, ...]


@dataclass(frozen=True)
class AdditionOutcome:
    addition: Addition
    kept: bool
    found: tuple[str, ...]


def load_cases(path: Path) -> list[Case]:
    return [Case(**item) for item in json.loads(path.read_text(encoding="utf-8"))]


def load_additions(path: Path) -> list[Addition]:
    return [Addition(**item) for item in json.loads(path.read_text(encoding="utf-8"))]


def learn_cases(
    cases: Sequence[Case],
    folder: Path,
    embedder: Embedder,
    llm: StructuredLLM,
    additions: Sequence[Addition] = (),
    same_aspect: float = SAME_ASPECT,
) -> tuple[GraphStore, int, float]:
    """Every case's two memories learnt, befores first; (the graph, LLM calls, seconds)."""
    database = open_database(folder)
    lock = WriteLock(folder / "memory.lock")
    stream = MemoryStream(database, lock, embedder, clock=lambda: FIRST_SAID + 2 * CHANGED_AFTER)
    befores = [c.before for c in cases] + [a.before for a in additions]
    afters = [c.after for c in cases] + [a.after for a in additions]
    said = [
        NewMemory(text, source="user", created_at=start + timedelta(minutes=index))
        for start, texts in ((FIRST_SAID, befores), (FIRST_SAID + CHANGED_AFTER, afters))
        for index, text in enumerate(texts)
    ]
    try:
        records = stream.add_many(said, merge_duplicates=False)
    finally:
        stream.close()
    store = GraphStore(database, lock, embedder)
    graph = KnowledgeGraph(store, embedder, llm, same_aspect=same_aspect)
    started = time.perf_counter()
    calls = 0
    for index, record in enumerate(records):
        calls += graph.learn([record]).llm_calls
        print(f"  {index + 1}/{len(records)} memories read", file=sys.stderr)
    return store, calls, time.perf_counter() - started


def score(store: GraphStore, case: Case) -> Outcome:
    now = graph_search(store, case.now).triplets
    then = graph_search(store, case.then).triplets
    current = any(t.current and _holds(t, case.current) for t in now[:CURRENT_WITHIN])
    told_before = [t for t in then if _holds(t, case.past)]
    return Outcome(
        case,
        current,
        past_found=bool(told_before),
        past=any(not t.current for t in told_before),
        found_now=tuple(t.describe() for t in now),
        found_then=tuple(t.describe() for t in then),
    )


def score_addition(store: GraphStore, addition: Addition) -> AdditionOutcome:
    found = graph_search(store, addition.question).triplets
    holding = [t for t in found if _holds(t, addition.kept)]
    kept = any(t.current for t in holding) and all(t.current for t in holding)
    return AdditionOutcome(addition, kept, tuple(t.describe() for t in found))


def _holds(triplet: Triplet, word: str) -> bool:
    return word.casefold() in triplet.text.casefold()


def report(
    outcomes: Sequence[Outcome],
    calls: int,
    seconds: float,
    added: Sequence[AdditionOutcome] = (),
) -> dict[str, Any]:
    count = len(outcomes)

    def share(hits: int, total: int = count) -> float:
        return hits / total if total else 0.0

    return {
        "cases": count,
        "current": share(sum(o.current for o in outcomes)),
        "past_found": share(sum(o.past_found for o in outcomes)),
        "past": share(sum(o.past for o in outcomes)),
        "both": share(sum(o.current and o.past for o in outcomes)),
        "additions": len(added),
        "kept": share(sum(a.kept for a in added), len(added)),
        "llm_calls": calls,
        "seconds": seconds,
        "failures": [
            {
                "after": o.case.after,
                "current": o.current,
                "past": o.past,
                "found_now": list(o.found_now[:CURRENT_WITHIN]),
                "found_then": list(o.found_then),
            }
            for o in outcomes
            if not (o.current and o.past)
        ]
        + [
            {"after": a.addition.after, "kept": False, "found": list(a.found)}
            for a in added
            if not a.kept
        ],
    }


def table(figures: dict[str, Any]) -> str:
    memories = 2 * (figures["cases"] + figures["additions"])
    lines = [
        f"{figures['cases']} changes: current fact found {figures['current']:.0%}, past fact "
        f"found {figures['past_found']:.0%}, found and marked past {figures['past']:.0%}, "
        f"both current and marked past {figures['both']:.0%}",
        f"{figures['additions']} additions: the first fact kept current {figures['kept']:.0%}",
        f"learning {memories} memories: {figures['llm_calls']} LLM calls in "
        f"{figures['seconds']:.0f} s ({figures['seconds'] / max(memories, 1):.1f} s a memory)",
    ]
    for failure in figures["failures"]:
        if "kept" in failure:
            lines.append(f"- {failure['after']!r}: not kept; found: {failure['found'][:4]}")
            continue
        lines.append(
            f"- {failure['after']!r}: current {'yes' if failure['current'] else 'no'}, past "
            f"{'yes' if failure['past'] else 'no'}; now: {failure['found_now'][:3]}; "
            f"then: {failure['found_then'][:4]}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--additions", type=Path, default=ADDITIONS)
    parser.add_argument("--cases", type=int, help="only the first N cases of each file")
    parser.add_argument(
        "--same-aspect",
        type=float,
        default=SAME_ASPECT,
        help="how near two relations must be for replacement (0: no gate)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    cases = load_cases(args.data)[: args.cases]
    additions = load_additions(args.additions)[: args.cases]
    from assistant.config import load_config
    from assistant.llm.runtime import LLMRuntime
    from assistant.parts import configured_embedder

    embedder = configured_embedder()
    with tempfile.TemporaryDirectory(prefix="fact-updates-") as scratch:
        with LLMRuntime(load_config().settings) as llm:
            store, calls, seconds = learn_cases(
                cases, Path(scratch), embedder, llm, additions, args.same_aspect
            )
        figures = report(
            [score(store, case) for case in cases],
            calls,
            seconds,
            [score_addition(store, addition) for addition in additions],
        )
    print(json.dumps(figures) if args.json else table(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
