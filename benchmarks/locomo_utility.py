"""Utility on LoCoMo: does weighing what the memories were worth in use keep recall, and at
which weight? (``python -m benchmarks.locomo --utility-weights 0 0.05 0.1 ...``)

LoCoMo has no usage, so it is simulated as the agent would see it, on half of the questions,
and recall is measured on the other half:

* each conversation's questions (categories 1-4, in file order) are split in two: the even
  places are asked first, as a user would, and give feedback; the odd places are held out and
  only measured;
* a feedback question retrieves the SHOWN (5, ``AgentConfig.retrieved_memories``) memories a
  turn shows, with the weights under test (utility included, so what earlier feedback raised
  is shown more: the loop the assistant runs). If some of the question's evidence turns are
  among them, the reply is taken as right and not corrected: those evidence turns gain utility
  (a reply uses what answers it; the rest shown are left alone, as the agent leaves memories a
  reply shares no word with). If none is, the reply is taken as wrong and corrected: every
  memory shown loses utility (the reply was made from them);
* the rows utility changed are folded back into the full-text index (a LanceDB update moves
  a row out of it, and its BM25 score differs until the next fold), then every held-out
  question is asked (k = the largest ``--k``, ``touch=False``) and
  recall@k is counted as for the other configurations.

Each weight starts from a copy of the conversation's stored memory with every utility 0, so
the weights do not share feedback; weight 0 is the plain configuration on the held-out half.
Utility changes with ``MemoryConfig``'s defaults (gain 1, loss 2, bound 5). Two sets of
weights are swept: ``contextual`` (relevance only, the benchmark's main row) and ``agent``
(``AgentConfig().retrieval_weights``: recency and importance 0.25, what the agent asks with).
The weight chosen is the one whose held-out recall is at least weight 0's at every k on both,
with the highest mean over k and both (0 if none).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from assistant.agent.turn import AgentConfig
from benchmarks.locomo import (
    ALL,
    RELEVANCE_ONLY,
    Conversation,
    Question,
    Tally,
    conversation_stream,
)
from benchmarks.stats import percentiles
from memory.embedder import Embedder
from memory.scoring import RetrievalWeights
from memory.stream import MemoryStream

SHOWN = AgentConfig().retrieved_memories
BASES: dict[str, RetrievalWeights] = {
    "contextual": RELEVANCE_ONLY,
    "agent": AgentConfig().retrieval_weights,
}


def split(questions: Sequence[Question]) -> tuple[list[Question], list[Question]]:
    """The questions that give feedback (even places) and those held out (odd places)."""
    return list(questions[0::2]), list(questions[1::2])


@dataclass
class Feedback:
    """What the simulated feedback did, summed over conversations."""

    answered: int = 0  # feedback questions with evidence among the memories shown
    corrected: int = 0  # those without: the reply was corrected
    raised: int = 0  # memories raised (one per memory and question)
    lowered: int = 0
    retrieve_s: list[float] = field(default_factory=list)
    adjust_s: list[float] = field(default_factory=list)

    def give(
        self,
        stream: MemoryStream,
        dia_ids: dict[str, str],
        question: Question,
        weights: RetrievalWeights,
    ) -> None:
        """Ask ``question`` as a user would, and judge the memories shown."""
        began = time.perf_counter()
        found = stream.retrieve(question.text, k=SHOWN, weights=weights, touch=False)
        self.retrieve_s.append(time.perf_counter() - began)
        shown = [m.record.id for m in found]
        evidence = set(question.evidence)
        used = [i for i in shown if dia_ids.get(i) in evidence]
        began = time.perf_counter()
        if used:
            stream.adjust_utility(used, helped=True)
            self.answered += 1
            self.raised += len(used)
        else:
            stream.adjust_utility(shown, helped=False)
            self.corrected += 1
            self.lowered += len(shown)
        self.adjust_s.append(time.perf_counter() - began)

    def report(self) -> dict[str, Any]:
        return {
            "answered": self.answered,
            "corrected": self.corrected,
            "raised": self.raised,
            "lowered": self.lowered,
            "retrieve_ms": _ms(self.retrieve_s),
            "adjust_ms": _ms(self.adjust_s),
        }


def _ms(seconds: Sequence[float]) -> dict[str, float]:
    figures = percentiles(seconds)
    return {"median": figures["p50"] * 1000, "p95": figures["p95"] * 1000}


@dataclass
class Run:
    """One base and weight: held-out recall and what its feedback did."""

    tally: Tally
    feedback: Feedback = field(default_factory=Feedback)


def sweep(
    conversations: Sequence[Conversation],
    embedder: Embedder,
    ks: Sequence[int],
    weights: Sequence[float],
    progress: bool = False,
) -> dict[str, dict[float, Run]]:
    """Held-out recall and feedback per base and utility weight."""
    ks = tuple(sorted(set(ks)))
    runs = {base: {w: Run(Tally(ks)) for w in weights} for base in BASES}
    with tempfile.TemporaryDirectory(prefix="locomo-utility-") as scratch:
        for conversation in conversations:
            stored = Path(scratch) / conversation.sample_id
            with conversation_stream(conversation, embedder, stored):
                pass  # stored once; each run works on a copy
            given, held_out = split(conversation.questions)
            for base, base_weights in BASES.items():
                for weight in weights:
                    began = time.perf_counter()
                    copy = Path(scratch) / f"{conversation.sample_id}-{base}-{weight}"
                    shutil.copytree(stored, copy)
                    run = runs[base][weight]
                    asked = replace(base_weights, utility=weight)
                    with conversation_stream(conversation, embedder, copy) as (stream, dia_ids):
                        for question in given:
                            run.feedback.give(stream, dia_ids, question, asked)
                        # A changed row leaves the full-text index until the next fold, and its
                        # BM25 score changes meanwhile: fold, so only the utility term differs
                        # from the plain configuration.
                        stream.records.ensure_indices()
                        for question in held_out:
                            found = stream.retrieve(
                                question.text, k=ks[-1], weights=asked, touch=False
                            )
                            run.tally.add(question, [dia_ids.get(f.record.id, "") for f in found])
                    shutil.rmtree(copy)
                    if progress:
                        print(
                            f"{conversation.sample_id} {base} utility {weight}: "
                            f"{len(given)} given, {len(held_out)} held out, "
                            f"{time.perf_counter() - began:.1f} s",
                            file=sys.stderr,
                        )
    return runs


def chosen_weight(runs: dict[str, dict[float, Run]]) -> float:
    """The weight whose held-out recall is at least weight 0's at every k on every base, with
    the highest mean over them (0 if no other is)."""
    means = {base: {w: run.tally.means() for w, run in by_w.items()} for base, by_w in runs.items()}

    def overall(weight: float) -> list[float]:
        return [per_k[ALL] or 0.0 for base in means for per_k in means[base][weight].values()]

    weights = next(iter(means.values())).keys()
    if 0.0 not in weights:
        raise ValueError("the sweep needs weight 0 to compare with")
    floor = overall(0.0)
    keeping = [
        w for w in weights if all(v >= f - 1e-12 for v, f in zip(overall(w), floor, strict=True))
    ]
    return max(keeping, key=lambda w: (sum(overall(w)), -w))


def to_json(runs: dict[str, dict[float, Run]]) -> dict[str, Any]:
    return {
        "utility": {
            base: {
                str(w): {"recall": run.tally.means(), "feedback": run.feedback.report()}
                for w, run in by_w.items()
            }
            for base, by_w in runs.items()
        },
        "chosen": chosen_weight(runs),
    }


def format_table(runs: dict[str, dict[float, Run]]) -> str:
    ks = next(iter(next(iter(runs.values())).values())).tally.ks
    header = ["weights", "utility weight", *(f"recall@{k}" for k in ks)]
    header += ["answered / corrected", "retrieve ms median / p95", "adjust ms median / p95"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    for base, by_w in runs.items():
        for weight, run in by_w.items():
            means = run.tally.means()
            report = run.feedback.report()
            cells = [base, f"{weight:g}"]
            cells += [f"{means[str(k)][ALL] or 0.0:.3f}" for k in ks]
            cells.append(f"{report['answered']} / {report['corrected']}")
            for name in ("retrieve_ms", "adjust_ms"):
                cells.append(f"{report[name]['median']:.1f} / {report[name]['p95']:.1f}")
            lines.append("| " + " | ".join(cells) + " |")
    held = next(iter(next(iter(runs.values())).values())).tally.counts.get(ALL, 0)
    lines.append(f"\nheld-out questions: {held}; chosen utility weight: {chosen_weight(runs):g}")
    return "\n".join(lines)
