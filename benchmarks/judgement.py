"""How well the app's judgement agrees with a careful person's, per profile, with the profile's
real local model: the importance rater on a labelled set, the agent's replies on the reply
probes, and the knowledge graph's extractor and the day planner on the extraction probes
(benchmarks/judgement_probes.py; every check there is a rule, no model judges a model).

    python -m benchmarks.judgement [--profiles quality fast] [--importance FILE] [--json]

``--importance`` takes a file of one memory a line, ``{"speaker", "text", "band",
"importance"}`` (``../shared/eval/importance/dev.jsonl``): each text is rated as the app stores
it (a user's line as "User: <text>", an assistant's already "Brain OS: <text>") by the app's own
rater (rules first, then the model). ``band_accuracy`` is the share rated in the labelled band
(low 1-3, mid 4-6, high 7-10), ``spearman`` the rank correlation with the labelled ratings,
``assistant_pleasantry_max`` the highest rating given to an assistant's line labelled low.

``--json`` prints ``{"<profile>": {"importance": {"band_accuracy", "spearman",
"assistant_pleasantry_max", "rated"}, "replies": {"passed", "total"}, "extraction": {"passed",
"total"}}}``. Progress and each failure go to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.judgement_probes import Reply, ReplyProbe

DEFAULT_IMPORTANCE_SET = Path(__file__).resolve().parents[2] / "shared/eval/importance/dev.jsonl"
PARTS = ("importance", "replies", "extraction")
BANDS = {"low": range(1, 4), "mid": range(4, 7), "high": range(7, 11)}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Labelled:
    speaker: str
    text: str
    band: str
    importance: int

    @property
    def stored(self) -> str:
        """The text as the app's memory stream holds it."""
        return self.text if self.speaker == "assistant" else f"User: {self.text}"


def read_labelled(path: Path) -> list[Labelled]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            rows.append(Labelled(row["speaker"], row["text"], row["band"], int(row["importance"])))
    return rows


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their mean rank (as Spearman's rho wants)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            result[order[position]] = (start + end) / 2 + 1
        start = end + 1
    return result


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Pearson's correlation of the ranks."""
    rx, ry = ranks(xs), ranks(ys)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    sx = sum((a - mx) ** 2 for a in rx) ** 0.5
    sy = sum((b - my) ** 2 for b in ry) ** 0.5
    return cov / (sx * sy) if sx and sy else 0.0


def score_importance(rows: Sequence[Labelled], ratings: Sequence[int]) -> dict[str, Any]:
    in_band = [rating in BANDS[row.band] for row, rating in zip(rows, ratings, strict=True)]
    pleasantries = [
        rating
        for row, rating in zip(rows, ratings, strict=True)
        if row.speaker == "assistant" and row.band == "low"
    ]
    return {
        "band_accuracy": round(sum(in_band) / len(rows), 3),
        "spearman": round(spearman([row.importance for row in rows], ratings), 3),
        "assistant_pleasantry_max": max(pleasantries, default=None),
        "rated": len(rows),
    }


def bench_importance(rows: Sequence[Labelled]) -> dict[str, Any]:
    """The app's rater on each labelled memory, from the vector the stream would store."""
    from assistant.agent.importance_anchors import ANCHORS
    from benchmarks.retrieval_scale import real_embedder
    from memory.importance import ImportanceScale, small_talk

    embedder = real_embedder()
    scale = ImportanceScale(embedder, ANCHORS)
    vectors = embedder.embed([row.stored for row in rows])
    ratings = [scale.rate(row.stored, vector) for row, vector in zip(rows, vectors, strict=True)]
    for row, rating in zip(rows, ratings, strict=True):
        mark = "  " if rating in BANDS[row.band] else "XX"
        by = "rule" if small_talk(row.stored) else "anchors"
        log(f"  {mark} {rating:>2} ({row.band} {row.importance}, {by}) {row.stored}")
    return score_importance(rows, ratings)


class Host:
    """The app's agent, stores and planner (``open_session``) on a fresh data folder, its LLM
    the profile's running local server."""

    def __init__(
        self, settings: Any, folder: Path, client: Any, embedder: Any, clock: Any = None
    ) -> None:
        """``clock``: the time the session goes by (default: the computer's)."""
        from assistant.service.llms import LLMs
        from assistant.service.session import open_session
        from assistant.tasks.approvals import Approvals

        settings = settings.model_copy(update={"data_dir": folder})
        self.llms = LLMs(settings)
        self.llms.llm.use(client)
        self.llms.background.use(client)
        self.session = open_session(
            settings, self.llms, Approvals(), embedder=embedder, clock=clock
        )
        self.agent = self.session.agent
        self.stream = self.session.stores.stream
        self.planner = self.session.planner

    def __enter__(self) -> Host:
        return self

    def __exit__(self, *_: object) -> None:
        from assistant.service.session import close_session

        close_session(self.session, self.llms)


def answer(probe: ReplyProbe, settings: Any, folder: Path, client: Any, embedder: Any) -> Reply:
    """The app's reply to the probe's message, on a fresh data folder holding its memories
    and after its earlier messages."""
    from assistant.agent.events import UserText

    with Host(settings, folder, client, embedder) as host:
        for memory in probe.memories:
            host.stream.add(memory)
        for message in probe.before:
            host.agent.respond(UserText(message))
        turn = host.agent.respond(UserText(probe.message))
    return Reply(turn.reply, tuple(step.tool for step in turn.steps))


def bench_replies(settings: Any, scratch: Path, client: Any, embedder: Any) -> dict[str, Any]:
    from benchmarks.judgement_probes import REPLY_PROBES, judge

    passed = 0
    for number, probe in enumerate(REPLY_PROBES):
        reply = answer(probe, settings, scratch / f"reply-{number}", client, embedder)
        failed = judge(probe, reply)
        passed += not failed
        mark = "  " if not failed else "XX"
        log(f"  {mark} [{probe.kind}] {probe.message} -> {reply.text!r} {list(reply.tools)}")
        for reason in failed:
            log(f"       {reason}")
    return {"passed": passed, "total": len(REPLY_PROBES)}


def bench_extraction(settings: Any, scratch: Path, client: Any, embedder: Any) -> dict[str, Any]:
    """Each extraction probe's memory through the knowledge graph's extractor and, alone in a
    fresh memory, through the day planner: both must keep the person's facts theirs."""
    from assistant.tasks.day_plan import PlanError
    from benchmarks.judgement_probes import EXTRACTION_PROBES, judge_plan, judge_triplets
    from memory.graph.extract import extract

    passed = total = 0
    for number, probe in enumerate(EXTRACTION_PROBES):
        extracted = extract(client, [probe.memory]) or []
        triplets = [(t.subject, t.relation, t.object) for t in extracted]
        with Host(settings, scratch / f"plan-{number}", client, embedder) as host:
            host.stream.add(probe.memory)
            try:
                host.planner.plan_day()
            except PlanError as error:  # nothing about the user's time: no plan, rightly
                log(f"  no plan: {error}")
            chunks = [piece.record.text for piece in host.planner.today()]
        for part, failed in (
            (f"facts {triplets}", judge_triplets(probe, triplets)),
            (f"plan {chunks}", judge_plan(probe, chunks)),
        ):
            total += 1
            passed += not failed
            log(f"  {'XX' if failed else '  '} {probe.memory} -> {part}")
            for reason in failed:
                log(f"       {reason}")
    return {"passed": passed, "total": total}


def bench_profile(profile: str, parts: Sequence[str]) -> dict[str, Any]:
    from assistant.config import load_config
    from assistant.llm.runtime import LLMRuntime
    from benchmarks.retrieval_scale import real_embedder

    embedder = real_embedder()
    with tempfile.TemporaryDirectory(prefix="judgement-", ignore_cleanup_errors=True) as scratch:
        folder = Path(scratch)
        flags = {"profile": profile, "data_dir": str(folder / "data")}
        flags["cache_dir"] = str(folder / "c")
        settings = load_config(flags=flags).settings
        # The assembled weights are read from the usual cache, not assembled again.
        settings = settings.model_copy(update={"cache_dir": load_config().settings.cache_dir})
        report: dict[str, Any] = {}
        with LLMRuntime(settings) as client:
            if "replies" in parts:
                log(f"[{profile}] replies")
                report["replies"] = bench_replies(settings, folder, client, embedder)
            if "extraction" in parts:
                log(f"[{profile}] extraction")
                report["extraction"] = bench_extraction(settings, folder, client, embedder)
    return report


def table(report: dict[str, dict[str, Any]]) -> str:
    lines = []
    for profile, parts in report.items():
        for part, figures in parts.items():
            lines.append(f"{profile:<8} {part:<11} {json.dumps(figures)}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--profiles", nargs="+", default=["quality", "fast"])
    parser.add_argument(
        "--importance",
        type=Path,
        default=DEFAULT_IMPORTANCE_SET if DEFAULT_IMPORTANCE_SET.exists() else None,
        help="a labelled set (JSON lines); left out where there is none",
    )
    parser.add_argument(
        "--parts", nargs="+", choices=PARTS, default=list(PARTS), help="what to measure"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    importance = None
    if "importance" in args.parts and args.importance is not None:
        log(f"importance of {args.importance}")
        importance = bench_importance(read_labelled(args.importance))
    report = {}
    for profile in args.profiles:
        # The rater asks no model (memory/importance.py): every profile rates alike.
        report[profile] = {"importance": importance} if importance is not None else {}
        report[profile] |= bench_profile(profile, args.parts)
    print(json.dumps(report) if args.json else table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
