"""What the agent's relevance floor costs and saves: the memories shown for a message are its
top ``k`` by the agent's weights whose similarity clears ``agent.least_similarity``. A higher
floor shows fewer memories with small talk (fewer prompt tokens a turn, less for a small model
to copy) and finds less of what a question needs.

    python -m benchmarks.relevance_floor [--data ../shared/eval/locomo/locomo-dev.json]
                                         [--floors 0.3 0.35 0.4 0.45 0.5] [--k 5] [--json]

Per LoCoMo conversation, its turns in a memory stream of their own (really embedded); for each
floor: ``recall`` is the mean share of a question's evidence turns among the memories shown
for it, and ``small_talk_shown`` the mean number of memories shown for each message of the
lived-in warm-up and of the turn benchmark's conversation (messages about a life that is not
in the stream). ``--json`` prints ``{"<floor>": {"recall", "small_talk_shown", "questions",
"messages"}}``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from benchmarks.lived_in import DEFAULT_LOCOMO, WARM_UP
from benchmarks.locomo import conversation_stream, load_conversations
from benchmarks.retrieval_scale import real_embedder
from benchmarks.turn import CONVERSATION

FLOORS = (0.3, 0.35, 0.4, 0.45, 0.5)


def measure(data: Path, floors: Sequence[float], k: int) -> dict[str, dict[str, float]]:
    from assistant.agent.turn import AgentConfig

    weights = AgentConfig().retrieval_weights
    embedder = real_embedder()
    recall: dict[float, list[float]] = {floor: [] for floor in floors}
    shown: dict[float, list[int]] = {floor: [] for floor in floors}
    for conversation in load_conversations(data):
        with (
            tempfile.TemporaryDirectory() as folder,
            conversation_stream(conversation, embedder, Path(folder)) as (stream, turn_of),
        ):
            for question in conversation.questions:
                found = stream.retrieve(question.text, k=k, weights=weights, touch=False)
                wanted = set(question.evidence)
                for floor in floors:
                    got = {turn_of.get(m.record.id) for m in found if m.similarity >= floor}
                    recall[floor].append(len(wanted & got) / len(wanted))
            for message in (*WARM_UP, *CONVERSATION):
                found = stream.retrieve(message, k=k, weights=weights, touch=False)
                for floor in floors:
                    shown[floor].append(sum(m.similarity >= floor for m in found))
    return {
        f"{floor:g}": {
            "recall": round(statistics.mean(recall[floor]), 3),
            "small_talk_shown": round(statistics.mean(shown[floor]), 2),
            "questions": len(recall[floor]),
            "messages": len(shown[floor]),
        }
        for floor in floors
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--floors", type=float, nargs="+", default=list(FLOORS))
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = measure(args.data, args.floors, args.k)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for floor, figures in report.items():
        print(
            f"floor {floor}: recall@{args.k} {figures['recall']:.3f} over "
            f"{figures['questions']} questions; {figures['small_talk_shown']:.2f} memories "
            f"shown a small-talk message"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
