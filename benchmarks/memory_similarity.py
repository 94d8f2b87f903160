"""How near in meaning the memories a turn would show are to its message: the ground for the
agent's ``least_similarity`` (memories below it are not shown). No LLM.

    python -m benchmarks.memory_similarity [--memories 1000] [--floor 0.3] [--json]

Two sets: the judgement probes' questions with the memories they are asked about (each must
pass the floor: they are what the answer needs), and the turn benchmark's 20 messages over its
1,000 varied memories (the best 5 each, as retrieval ranks them; none of those memories was
written about the messages, so what passes is shown for nothing).

``--json`` prints ``{"needed": {"similarity": {"p50", "p95", "max"}, "least", "passing"},
"turn": {"similarity": {...}, "passing", "messages_showing_none", "messages"}, "floor"}``
(``passing``: the share at or above the floor).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.stats import percentiles
from benchmarks.turn import CONVERSATION, build_memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--floor", type=float, default=None, help="the app's by default")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from assistant.agent.turn import AgentConfig

    floor = AgentConfig().least_similarity if args.floor is None else args.floor
    with tempfile.TemporaryDirectory() as folder:
        results = measure(Path(folder), args.memories, floor)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    needed, turn = results["needed"], results["turn"]
    print(
        f"memories the probes need: similarity {_figures(needed['similarity'])}, least "
        f"{needed['least']:.2f}, {needed['passing']:.0%} at or above {floor}"
    )
    print(
        f"turn benchmark's best 5 per message: similarity {_figures(turn['similarity'])}, "
        f"{turn['passing']:.0%} at or above {floor}; "
        f"{turn['messages_showing_none']} of {turn['messages']} messages would show none"
    )


def _figures(values: dict[str, float]) -> str:
    return f"{values['p50']:.2f} / {values['p95']:.2f} / {values['max']:.2f}"


def measure(folder: Path, memories: int, floor: float) -> dict[str, Any]:
    from assistant.agent.turn import AgentConfig
    from benchmarks.judgement_probes import REPLY_PROBES
    from benchmarks.retrieval_scale import real_embedder
    from memory.scoring import cosine

    embedder = real_embedder()
    needed: list[float] = []
    for probe in REPLY_PROBES:
        if probe.memories:
            vectors = embedder.embed(list(probe.memories))
            needed.extend(cosine(embedder.embed([probe.message])[0], vectors).tolist())

    from memory.database import open_database
    from memory.locking import WriteLock
    from memory.stream import MemoryStream

    build_memory(folder, memories)
    stream = MemoryStream(open_database(folder), WriteLock(folder / "memory.lock"), embedder)
    config = AgentConfig()
    best: list[float] = []
    none = 0
    for message in CONVERSATION:
        found = stream.retrieve(
            message, k=config.retrieved_memories, weights=config.retrieval_weights, touch=False
        )
        best.extend(m.similarity for m in found)
        none += all(m.similarity < floor for m in found)
    stream.close()
    return {
        "needed": {
            "similarity": percentiles(needed),
            "least": min(needed),
            "passing": sum(value >= floor for value in needed) / len(needed),
        },
        "turn": {
            "similarity": percentiles(best),
            "passing": sum(value >= floor for value in best) / len(best),
            "messages_showing_none": none,
            "messages": len(CONVERSATION),
        },
        "floor": floor,
    }


if __name__ == "__main__":
    main()
