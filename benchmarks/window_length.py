"""What the length of the window costs a turn on the local server: a turn's new tokens (the
memories shown with a message, and the message) read, and its reply written, after windows of
different lengths.

    python -m benchmarks.window_length [--profile fast] [--lengths 500 2000 4000 8000]
                                       [--repeats 5] [--json]

The profile's model runs as the app runs it (``LLMRuntime``'s options, llama-server). For each
length, a conversation of about that many tokens (the agent's instructions, then a dialogue
said over and over with its turns numbered) is read first, untimed; then each repeat appends a
block of memories and a message (about 170 tokens, as a turn in a lived-in folder adds) and
streams a reply of ``DECODE_TOKENS`` tokens; the reply stays in the conversation, as it would.

* ``first_piece_ms``: the request to the reply's first streamed piece;
* ``read_ms_per_token``: that over the tokens appended;
* ``write_ms_per_token``: the reply's tokens after the first, over the time they took.

Each is printed as p50 / p95 / max per length, with the ratio of its p50 to the longest
length's (the window a lived-in folder reached before its oldest part was handed over at the
compaction share). ``--json`` prints ``{"profile", "repeats", "lengths": {"<tokens>":
{"first_piece_ms", "read_ms_per_token", "write_ms_per_token", "appended_tokens"}},
"ratio_to_longest": {"<tokens>": {<figure>: ratio}}}``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.llm_server import DIALOGUE, Server, log, prompt_tokens
from benchmarks.stats import percentiles

if TYPE_CHECKING:
    from assistant.llm.messages import Message

LENGTHS = (500, 2000, 4000, 8000)
DECODE_TOKENS = 48
FIGURES = ("first_piece_ms", "read_ms_per_token", "write_ms_per_token")
MEMORIES = (
    "- (2026-03-02) User: I switched to the early shift at the depot, it starts at six.",
    "- (2026-03-09) User: My neighbour Ilse lends me her ladder whenever I need it.",
    "- (2026-03-15) Brain OS: Noted, the allotment committee meets on the first Sunday.",
    "- (2026-04-01) User: I want to repaint the shed green before the summer.",
    "- (2026-04-11) User: The bakery on Kell Street does the best rye bread in town.",
)
MESSAGES = (
    "What colour did I say I'd paint the shed?",
    "Remind me who lends me a ladder.",
    "When does my shift start these days?",
    "Where do I get rye bread?",
    "When does the allotment committee meet?",
)


def conversation(tokens: int, count: Any) -> list[Message]:
    """The agent's instructions (the small models' reply design) and a dialogue said over and
    over, about ``tokens`` long."""
    from assistant.agent.instructions import instructions

    messages: list[Message] = [{"role": "system", "content": instructions(design="plain")}]
    turn = 0
    while prompt_tokens(count, messages) < tokens:
        role, text = DIALOGUE[turn % len(DIALOGUE)]
        messages.append({"role": role, "content": f"({turn}) {text}"})
        turn += 1
    return messages


def turn_messages(repeat: int) -> list[Message]:
    """A turn's new messages: the memories shown with it, then the message."""
    from assistant.agent.context import MEMORIES_HEAD

    lines = MEMORIES[repeat % len(MEMORIES) :] + MEMORIES[: repeat % len(MEMORIES)]
    block = f"{MEMORIES_HEAD} (what is not here or in the conversation, you do not know):\n"
    return [
        {"role": "system", "content": block + "\n".join(lines)},
        {"role": "user", "content": MESSAGES[repeat % len(MESSAGES)]},
    ]


def measure_length(client: Any, count: Any, tokens: int, repeats: int) -> dict[str, Any]:
    messages = conversation(tokens, count)
    first_piece(client, messages)  # read, untimed
    values: dict[str, list[float]] = {figure: [] for figure in FIGURES}
    appended: list[int] = []
    for repeat in range(repeats):
        new = turn_messages(repeat)
        messages += new
        started = time.perf_counter()
        first: float | None = None
        text: list[str] = []
        for piece in client.stream(messages, max_tokens=DECODE_TOKENS, temperature=0.0):
            first = first or time.perf_counter()
            text.append(piece)
        ended = time.perf_counter()
        assert first is not None, "the server wrote nothing"
        reply = "".join(text)
        read = prompt_tokens(count, new)
        written = int(count(reply))
        values["first_piece_ms"].append((first - started) * 1000)
        values["read_ms_per_token"].append((first - started) * 1000 / read)
        values["write_ms_per_token"].append((ended - first) * 1000 / max(written - 1, 1))
        appended.append(read)
        messages.append({"role": "assistant", "content": reply})
    log(
        f"  {tokens} tokens: "
        + ", ".join(f"{f} {sorted(v)[len(v) // 2]:.1f}" for f, v in values.items())
    )
    report: dict[str, Any] = {f: percentiles(v) for f, v in values.items()}
    report["appended_tokens"] = percentiles(appended)
    return report


def first_piece(client: Any, messages: Sequence[Message]) -> None:
    pieces = client.stream([*messages, {"role": "user", "content": "…"}], max_tokens=1)
    try:
        next(pieces, None)
    finally:
        pieces.close()


def measure(settings: Any, lengths: Sequence[int], repeats: int) -> dict[str, Any]:
    from assistant.llm.tokens import vocabulary_counter
    from assistant.model_paths import ProfileModels

    count = vocabulary_counter(ProfileModels(settings).llm().gguf)
    report: dict[str, Any] = {"repeats": repeats, "lengths": {}}
    with tempfile.TemporaryDirectory(prefix="window-length-") as scratch:
        server = Server(settings, "llama-server", Path(scratch))
        client = server.start()
        try:
            for tokens in lengths:
                report["lengths"][str(tokens)] = measure_length(client, count, tokens, repeats)
        finally:
            server.stop()
    longest = report["lengths"][str(max(lengths))]
    report["ratio_to_longest"] = {
        length: {f: figures[f]["p50"] / longest[f]["p50"] for f in FIGURES}
        for length, figures in report["lengths"].items()
    }
    return report


def table(report: dict[str, Any]) -> str:
    lines = [
        f"{report['profile']}, {report['repeats']} repeats; p50 / p95 / max (ratio of the p50 "
        "to the longest window's)",
        "",
        "| window (tokens) | appended | " + " | ".join(FIGURES) + " |",
        "| --- | --- | " + " | ".join("---" for _ in FIGURES) + " |",
    ]
    for length, figures in report["lengths"].items():
        cells = [
            f"{figures[f]['p50']:,.1f} / {figures[f]['p95']:,.1f} / {figures[f]['max']:,.1f} "
            f"({report['ratio_to_longest'][length][f]:.2f})"
            for f in FIGURES
        ]
        appended = figures["appended_tokens"]["p50"]
        lines.append(f"| {int(length):,} | {appended:.0f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    from assistant.config import load_config

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="fast")
    parser.add_argument("--lengths", type=int, nargs="+", default=list(LENGTHS))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    settings = load_config(flags={"profile": args.profile}).settings
    report = {"profile": args.profile, **measure(settings, args.lengths, args.repeats)}
    print(json.dumps(report, indent=2) if args.json else table(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
