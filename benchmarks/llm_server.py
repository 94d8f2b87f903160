"""llama.cpp's own server (llama-server) against llama-cpp-python's, side by side on the same
GGUF, in one run.

    python -m benchmarks.llm_server [--profile fast] [--repeats 5] [--json]

Each server runs the profile's model as the app runs it (``LLMRuntime``'s options: the context
window, 2 threads; llama-server with ``--cache-reuse`` and a slot folder). The prompt is what a
conversation looks like after a while: the agent's real instructions and tools, a summary of
earlier talk, then a dialogue (about 2,000 tokens). Per repeat, per server:

* ``prefill_tok_s``: a prompt no server has read (its first line names the repeat), its tokens
  over the time to the first streamed piece;
* ``decode_tok_s``: the reply's tokens after the first, over the time they took;
* ``appended_ms``: first piece of the same prompt with one more exchange appended (what every
  turn of an append-only context costs);
* ``middle_removed_ms``: first piece after the first four messages of the dialogue were taken
  out (everything after them the same) and one more message added: what ``--cache-reuse``
  is for;
* ``compaction_appended_ms``: first piece after a compaction as the app makes it, on a
  conversation twice as long (the dialogue twice; read first, untimed): the summary and the
  first 12 messages taken out, the new summary appended as a note after the rest, and one
  more message (llama-server shifts the rest into place and reads only the note and the
  message);
* ``middle_change_ms``: first piece after the summary in the middle of the prompt changed (as a
  compaction that kept its summary on top would change it), everything after it the same, and
  one more message: new text in the middle, which no server reuses past;
* ``restart_ms``: the server stopped and started again, then first piece of the last prompt with
  one more message (llama-server restores the slot it saved at the stop; ``restore_ms`` is that
  restore, part of starting);

Each figure is printed as p50 / p95 / max, with llama-server's speedup over llama-cpp-python
(``speedup_<figure>``, p50 over p50). ``--json`` prints ``{"profile", "repeats",
"prompt_tokens", "llama-server": {...}, "llama-cpp-python": {...}, "speedup": {...}}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.stats import percentiles

if TYPE_CHECKING:
    from assistant.llm.messages import Message

SERVERS = ("llama-server", "llama-cpp-python")
FIGURES = (
    "prefill_tok_s",
    "decode_tok_s",
    "appended_ms",
    "compaction_appended_ms",
    "middle_removed_ms",
    "middle_change_ms",
    "restart_ms",
)
DECODE_TOKENS = 64

SUMMARY = (
    "Sam moved to Leeds in March for a nursing job at St James's hospital and works night "
    "shifts on a surgical ward. Sister Beatrix lives in Porto with her husband Tomas and their "
    "son Leo (7). Sam is learning Portuguese (ten minutes a day) before a visit in May, prefers "
    "tea to coffee, runs 5 km three mornings a week, has a grey cat called Pebble, and is "
    "saving for a car. Manager: Priya. Best friend: Okoye, a teacher in Manchester. Dentist "
    "next Tuesday at 3 pm. Asked for short replies."
)
OTHER_SUMMARY = SUMMARY.replace("three mornings", "four mornings").replace("May", "June")
DIALOGUE = (
    ("user", "I finished my third night shift in a row, I'm exhausted."),
    ("assistant", "Three nights in a row is a lot. Try to sleep in a dark room and eat first."),
    ("user", "Good idea. Did I tell you Leo starts swimming lessons next month?"),
    ("assistant", "You hadn't. That's lovely news; I'll remember Leo's swimming lessons."),
    ("user", "Beatrix sent a photo of the river in Porto. I can't wait to go."),
    ("assistant", "May will come quickly. Want a packing list closer to the date?"),
    ("user", "Yes please, and remind me to renew my passport."),
    ("assistant", "Noted: renew your passport before May. I'll bring it up next week."),
    ("user", "Pebble knocked my tea over this morning, again."),
    ("assistant", "Cats and tea never mix. Maybe a mug with a lid for mornings?"),
    ("user", "Ha, maybe. What's a quick dinner I can make after a shift?"),
    ("assistant", "An omelette with spinach and cheese: ten minutes, one pan."),
    ("user", "Okoye is visiting on Saturday; we might go to the market."),
    ("assistant", "Enjoy Saturday with Okoye. Kirkgate Market opens at nine."),
)


@dataclass
class Figures:
    values: dict[str, list[float]] = field(default_factory=lambda: {f: [] for f in FIGURES})
    restore_ms: list[float] = field(default_factory=list)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def prompt(repeat: int, summary: str = SUMMARY) -> list[Message]:
    from assistant.agent.instructions import instructions

    system = f"[conversation {repeat}]\n{instructions()}\n\n## Core memory\n<human>\nSam\n</human>"
    messages: list[Message] = [
        {"role": "system", "content": system},
        {"role": "system", "content": f"Summary of earlier conversation:\n{summary}"},
    ]
    messages += [{"role": role, "content": text} for role, text in DIALOGUE]
    return messages


def with_message(messages: list[Message], text: str) -> list[Message]:
    return [*messages, {"role": "user", "content": text}]


def first_piece_ms(client: Any, messages: Sequence[Message]) -> float:
    started = time.perf_counter()
    pieces = client.stream(messages, max_tokens=8, temperature=0.0)
    try:
        next(pieces, None)
    finally:
        pieces.close()
    return (time.perf_counter() - started) * 1000


def prompt_tokens(count: Any, messages: Sequence[Message]) -> int:
    from assistant.agent.context import MESSAGE_OVERHEAD_TOKENS

    return sum(int(count(m["content"])) + MESSAGE_OVERHEAD_TOKENS for m in messages)


class Server:
    """One kind of server on the profile's model, restartable, with a client."""

    def __init__(self, settings: Any, name: str, slot_dir: Path) -> None:
        from assistant.llm.runtime import LLMRuntime

        self.settings = settings.model_copy(
            update={"llm": settings.llm.model_copy(update={"server": name})}
        )
        self.settings = self.settings.model_copy(update={"cache_dir": slot_dir})
        self.name = name
        self.runtime = LLMRuntime(self.settings)
        if self.runtime.server_name != name:
            raise SystemExit(f"{name} is not installed here (run `make test` first)")
        self.client: Any = None
        self.restore_ms = 0.0

    def start(self) -> Any:
        self.client = self.runtime.start()
        slots = self.runtime.slots
        if slots is not None:
            started = time.perf_counter()
            slots.restore()
            self.restore_ms = (time.perf_counter() - started) * 1000
        return self.client

    def stop(self) -> None:
        self.runtime.stop()


def run_server(settings: Any, name: str, repeats: int, count: Any, scratch: Path) -> Figures:
    from assistant.agent.context import SUMMARY_HEAD

    figures = Figures()
    server = Server(settings, name, scratch / name)
    client = server.start()
    try:
        first_piece_ms(client, [{"role": "user", "content": "Hello."}])  # weights paged in
        for repeat in range(repeats):
            messages = prompt(repeat)
            tokens = prompt_tokens(count, messages)
            started = time.perf_counter()
            first: float | None = None
            text = []
            for piece in client.stream(
                with_message(messages, "Tell me a long story about Pebble the cat."),
                max_tokens=DECODE_TOKENS,
                temperature=0.0,
            ):
                first = first or time.perf_counter()
                text.append(piece)
            ended = time.perf_counter()
            assert first is not None, "the server wrote nothing"
            figures.values["prefill_tok_s"].append(tokens / (first - started))
            written = int(count("".join(text)))
            figures.values["decode_tok_s"].append(max(written - 1, 1) / (ended - first))
            appended: list[Message] = [
                *messages,
                {"role": "user", "content": "Tell me a long story about Pebble the cat."},
                {"role": "assistant", "content": "".join(text)},
            ]
            figures.values["appended_ms"].append(
                first_piece_ms(client, with_message(appended, "Thanks! What time is it?"))
            )
            # A conversation twice as long, so the part a compaction keeps is over the
            # 256-token chunk --cache-reuse needs: read, then its first 12 messages and the
            # summary out and the new summary appended.
            longer = [*messages, *messages[2:]]
            first_piece_ms(client, with_message(longer, "And the weekend?"))
            note: Message = {"role": "system", "content": f"{SUMMARY_HEAD}\n{OTHER_SUMMARY}"}
            compacted = [messages[0], *longer[14:], note]
            figures.values["compaction_appended_ms"].append(
                first_piece_ms(client, with_message(compacted, "What's Leo doing next month?"))
            )
            removed = [*messages[:2], *messages[6:]]
            figures.values["middle_removed_ms"].append(
                first_piece_ms(client, with_message(removed, "Is Pebble a grey cat?"))
            )
            changed = prompt(repeat, OTHER_SUMMARY)
            figures.values["middle_change_ms"].append(
                first_piece_ms(client, with_message(changed, "What's Leo doing next month?"))
            )
            last = with_message(changed, "What's Leo doing next month?")
            server.stop()
            client = server.start()
            figures.restore_ms.append(server.restore_ms)
            figures.values["restart_ms"].append(
                first_piece_ms(client, [*last, {"role": "user", "content": "And Beatrix?"}])
            )
            log(
                f"  {name} repeat {repeat + 1}: "
                + ", ".join(f"{f} {v[-1]:.0f}" for f, v in figures.values.items())
            )
    finally:
        server.stop()
    return figures


def measure(settings: Any, repeats: int) -> dict[str, Any]:
    from assistant.llm.tokens import vocabulary_counter
    from assistant.model_paths import ProfileModels

    count = vocabulary_counter(ProfileModels(settings).llm().gguf)
    report: dict[str, Any] = {
        "repeats": repeats,
        "prompt_tokens": prompt_tokens(count, prompt(0)),
    }
    with tempfile.TemporaryDirectory(prefix="llm-server-bench-") as scratch:
        for name in SERVERS:
            figures = run_server(settings, name, repeats, count, Path(scratch))
            report[name] = {f: percentiles(v) for f, v in figures.values.items()}
            if name == "llama-server":
                report[name]["restore_ms"] = percentiles(figures.restore_ms)
    fast, slow = report["llama-server"], report["llama-cpp-python"]
    report["speedup"] = {
        f: (fast[f]["p50"] / slow[f]["p50"])
        if f.endswith("tok_s")
        else (slow[f]["p50"] / fast[f]["p50"])
        for f in FIGURES
    }
    return report


def table(report: dict[str, Any]) -> str:
    lines = [
        f"prompt: {report['prompt_tokens']} tokens; {report['repeats']} repeats; p50 / p95 / max",
        "",
        "| figure | llama-server | llama-cpp-python | llama-server's speedup (p50) |",
        "| --- | --- | --- | --- |",
    ]
    for figure in FIGURES:
        cells = [
            " / ".join(f"{report[name][figure][k]:.0f}" for k in ("p50", "p95", "max"))
            for name in SERVERS
        ]
        lines.append(f"| {figure} | {cells[0]} | {cells[1]} | {report['speedup'][figure]:.1f}x |")
    restore = report["llama-server"]["restore_ms"]
    lines.append(
        f"| restore_ms (at start) | {restore['p50']:.0f} / {restore['p95']:.0f} / "
        f"{restore['max']:.0f} | | |"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--profile", default="fast", choices=["fast", "quality"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    from assistant.config import load_config

    settings = load_config(flags={"profile": args.profile}).settings
    report = {"profile": args.profile, **measure(settings, args.repeats)}
    print(json.dumps(report) if args.json else table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
