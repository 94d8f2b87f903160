"""Prompt-lookup decoding on the local llama-server: the first word of a reply, and the whole
reply, with the draft off and on, in one run.

    python -m benchmarks.lookup_decoding [--profile fast] [--drafts 0 4] [--json]

For each draft length (``llm.lookup_draft``; 0 is off) the profile's model is started as the
app starts it (``LLMRuntime``), and the same conversation is held on it: the agent's real
instructions, a summary and a dialogue (``benchmarks/llm_server.py``'s prompt), then the voice
benchmark's questions one after another, each reply held to the agent's action schema at the
agent's temperature and kept in the history as written. ``first_word_ms``: from the request to
the first character of the message's text; ``reply_ms``: to the end of the reply (capped at
``--max-tokens``); ``ms_per_token``: that over the tokens written (replies are sampled, so
their lengths differ from run to run; the writing speed compares). Printed as p50 / p95 /
max, with each draft's ratio to the first one's (p50 over p50). ``--json``: ``{"profile",
"questions", "<draft>": {"first_word_ms", "reply_ms", "ms_per_token"}, "ratio": {"<draft>":
{...}}}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.stats import percentiles

FIGURES = ("first_word_ms", "reply_ms", "ms_per_token")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def converse(
    client: Any, count: Any, questions: Sequence[str], max_tokens: int
) -> dict[str, list[float]]:
    from assistant.agent.streaming import MessageStream
    from assistant.agent.tools import TOOLS, action_schema
    from assistant.agent.turn import AgentConfig
    from benchmarks.llm_server import prompt

    schema = action_schema(TOOLS)
    temperature = AgentConfig().temperature
    messages = prompt(0)
    figures: dict[str, list[float]] = {figure: [] for figure in FIGURES}
    for question in questions:
        messages.append({"role": "user", "content": question})
        message = MessageStream()
        written, first = "", None
        started = time.perf_counter()
        for piece in client.stream(
            messages, max_tokens=max_tokens, temperature=temperature, schema=schema
        ):
            written += piece
            if first is None and message.feed(piece).strip():
                first = time.perf_counter()
        ended = time.perf_counter()
        figures["first_word_ms"].append(((first or ended) - started) * 1000)
        figures["reply_ms"].append((ended - started) * 1000)
        # Replies differ from run to run (sampled): the writing speed compares, their length
        # does not.
        figures["ms_per_token"].append((ended - started) * 1000 / max(int(count(written)), 1))
        messages.append({"role": "assistant", "content": written})
        log(f"    {figures['first_word_ms'][-1]:5.0f} ms | {written[:70]!r}")
    return figures


def measure(profile: str, drafts: Sequence[int], max_tokens: int) -> dict[str, Any]:
    from assistant.config import load_config
    from assistant.llm.runtime import LLMRuntime
    from assistant.llm.tokens import vocabulary_counter
    from assistant.model_paths import ProfileModels
    from benchmarks.llm_server import prompt
    from benchmarks.voice_latency import QUESTIONS

    report: dict[str, Any] = {"profile": profile, "questions": len(QUESTIONS)}
    count: Any = None
    with tempfile.TemporaryDirectory(prefix="lookup-bench-") as scratch:
        for draft in drafts:
            flags = {"profile": profile, "llm.lookup_draft": str(draft)}
            settings = load_config(flags=flags, environ={}).settings
            settings = settings.model_copy(update={"data_dir": Path(scratch) / f"data-{draft}"})
            log(f"{profile}, lookup draft {draft}")
            with LLMRuntime(settings) as client:
                # The weights paged in and the prompt read (a later start may restore the
                # slot the one before saved), so each run times the questions alone.
                "".join(client.stream(prompt(0), max_tokens=1))
                if count is None:
                    count = vocabulary_counter(ProfileModels(settings).llm().gguf)
                figures = converse(client, count, QUESTIONS, max_tokens)
            report[str(draft)] = {figure: percentiles(v) for figure, v in figures.items()}
    base = report[str(drafts[0])]
    report["ratio"] = {
        str(draft): {
            figure: round(report[str(draft)][figure]["p50"] / base[figure]["p50"], 2)
            for figure in FIGURES
        }
        for draft in drafts
    }
    return report


def table(report: dict[str, Any], drafts: Sequence[int]) -> str:
    lines = [
        f"{report['profile']}: {report['questions']} questions; p50 / p95 / max",
        "",
        "| lookup draft | first word ms | reply ms | ms per token written | ratio to the "
        "first row (p50) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for draft in drafts:
        row = report[str(draft)]
        cells = [
            " / ".join(f"{row[figure][key]:,.0f}" for key in ("p50", "p95", "max"))
            for figure in FIGURES
        ]
        ratio = report["ratio"][str(draft)]
        ratios = " / ".join(str(ratio[figure]) for figure in FIGURES)
        lines.append(f"| {draft} | {' | '.join(cells)} | {ratios} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="fast", choices=["fast", "quality"])
    parser.add_argument("--drafts", type=int, nargs="+", default=[0, 4])
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = measure(args.profile, args.drafts, args.max_tokens)
    print(json.dumps(report, indent=2) if args.json else table(report, args.drafts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
