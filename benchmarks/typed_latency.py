"""How soon a typed message is answered as the user runs the app: `brain serve` with its
defaults (graph, reflection, day plan, heartbeat look; a heartbeat made to tick halfway) in a
copy of the profile's lived-in folder (benchmarks/lived_in.py: the LoCoMo dev turns as
memories, a conversation already compacted), the turn benchmark's scripted conversation typed
one message at a time, ``--pause-s`` after each reply ended, no typing simulation (each message
arrives whole, as a paste or a fast typist's Enter).

    python -m benchmarks.typed_latency [--profiles fast quality] [--turns 40] [--pause-s 3]
                                       [--runs 1] [--set KEY=VALUE ...] [--json]

Per turn, from the moment the message is sent: ``first_word_ms`` (the first streamed piece
holding a letter or digit; a turn that fails or times out counts at ``--turn-timeout-s``), and
the service's own stage times (``ReplyEnd.stages_ms``, from when it accepted the message):
``started`` (off the queue), ``memories`` (retrieved), ``prompt_sent``, ``first_text``,
``first_word``, ``reply_end``. ``ratio_to_goal`` is the first-word p50 over the issue's goal
(fast 1,500 ms, quality 3,000 ms). ``--runs N`` repeats the whole run, each from a fresh copy
of the folder, and reports each run (the machine is noisy: give the spread); ``--set`` passes
settings to the service (``llm.pause_background=false`` for the design without the pause).

``--json`` prints ``{"<profile>": {"runs": [{"first_word_ms", "stages_ms": {stage: {"p50",
"p95", "max"}}, "ratio_to_goal", "turns", "replied", "failed", "replies_copying_an_earlier_one",
"replies_repeating_the_user", "replies_saying_the_prompt_back"}], "first_word_ms" (all runs'
turns together), "ratio_to_goal", "lived_in", "pause_s", "settings"}}``; per-turn lines go to
stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.replies import copied_share, repeated_share
from benchmarks.stats import percentiles

GOALS_MS = {"fast": 1500.0, "quality": 3000.0}
STAGES = ("started", "memories", "prompt_sent", "first_text", "first_word", "reply_end")
TURN_TIMEOUT_S = 120.0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_once(
    profile: str, lived: Path, turns: int, pause_s: float, timeout_s: float, extra: dict[str, str]
) -> list[Any]:
    """One run of ``turns`` messages through a fresh service in a copy of ``lived``."""
    from benchmarks.conversation import Conversation, run_conversation
    from benchmarks.conversation_rules import Case
    from benchmarks.turn import CONVERSATION

    messages = itertools.islice(itertools.cycle(CONVERSATION), turns)
    script = Conversation("typed", "Sam", tuple(Case.of({"say": text}) for text in messages))
    with tempfile.TemporaryDirectory(prefix="typed-latency-", ignore_cleanup_errors=True) as root:
        results, _ = asyncio.run(
            run_conversation(
                profile,
                None,
                script,
                Path(root),
                timeout_s,
                extra=extra,
                lived=lived,
                pause_s=pause_s,
            )
        )
    return results


def summarise(profile: str, results: Sequence[Any]) -> dict[str, Any]:
    first_word = percentiles([result.first_word_ms for result in results])
    answered = [result for result in results if result.error is None and result.reply]
    return {
        "first_word_ms": first_word,
        "stages_ms": {
            stage: percentiles([r.stages_ms[stage] for r in results if stage in r.stages_ms])
            for stage in STAGES
        },
        "ratio_to_goal": round(first_word["p50"] / GOALS_MS[profile], 2),
        "turns": len(results),
        "replied": len(answered),
        "failed": sum(result.error is not None for result in results),
        "replies_copying_an_earlier_one": copied_share([r.reply for r in answered]),
        "replies_repeating_the_user": repeated_share([(r.case.say, r.reply) for r in answered]),
        # Six words or more of what the window told the agent (conversation_rules.copies).
        "replies_saying_the_prompt_back": f"{sum(map(_says_the_prompt, answered))}/{len(answered)}",
    }


def _says_the_prompt(result: Any) -> bool:
    return any(copy.startswith("the instructions") for copy in result.verdict.copies)


def bench_profile(
    profile: str, turns: int, pause_s: float, runs: int, timeout_s: float, extra: dict[str, str]
) -> dict[str, Any]:
    from benchmarks.lived_in import lived_in

    lived = lived_in(profile)
    every: list[Any] = []
    per_run = []
    for number in range(1, runs + 1):
        log(f"{profile}: run {number}/{runs}, {turns} turns in a copy of {lived}")
        results = run_once(profile, lived, turns, pause_s, timeout_s, extra)
        figures = summarise(profile, results)
        words = figures["first_word_ms"]
        log(
            f"{profile} run {number}: first word p50 {words['p50']:,.0f} ms, p95 "
            f"{words['p95']:,.0f}, max {words['max']:,.0f}; {figures['failed']} failed"
        )
        per_run.append(figures)
        every += results
    together = percentiles([result.first_word_ms for result in every])
    return {
        "runs": per_run,
        "first_word_ms": together,
        "ratio_to_goal": round(together["p50"] / GOALS_MS[profile], 2),
        "lived_in": True,
        "pause_s": pause_s,
        "settings": extra,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--profiles", nargs="+", default=["fast", "quality"], choices=GOALS_MS)
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--pause-s", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--turn-timeout-s", type=float, default=TURN_TIMEOUT_S)
    parser.add_argument(
        "--set", nargs="*", default=[], metavar="KEY=VALUE", help="settings for the service"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if min(args.turns, args.runs) < 1:
        parser.error("--turns and --runs must be at least 1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    extra = dict(item.split("=", 1) for item in args.set)
    report = {
        profile: bench_profile(
            profile, args.turns, args.pause_s, args.runs, args.turn_timeout_s, extra
        )
        for profile in args.profiles
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for profile, figures in report.items():
        for number, run in enumerate(figures["runs"], 1):
            words = run["first_word_ms"]
            stages = ", ".join(
                f"{stage} {shown['p50']:,.0f}" for stage, shown in run["stages_ms"].items()
            )
            print(
                f"{profile} run {number}: first word p50 {words['p50']:,.0f} ms, p95 "
                f"{words['p95']:,.0f}, max {words['max']:,.0f} ({run['ratio_to_goal']}x the "
                f"goal); {run['replied']}/{run['turns']} replied; stage p50s: {stages}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
