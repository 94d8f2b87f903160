"""How fast the agent answers: from an event to the first token and to the end of the first
sentence the user hears, over a scripted conversation, per profile, with the stable prompt
prefix the llama.cpp server can reuse and with that reuse defeated.

    python -m benchmarks.turn [--profiles fast quality] [--turns 20] [--memories 1000] [--json]

For each profile: the profile's local model on a llama.cpp server started here, a memory of
``--memories`` varied stored records (the scale benchmark's templates, really embedded), and a
fresh agent that gets ``--turns`` scripted user messages through ``Agent.respond``, one after
another, as the TUI sends them. Per turn:

* ``first_token_ms``: from ``respond`` being called (retrieval, recording and prompt building
  included) to the first piece the LLM streams back;
* ``first_sentence_ms``: to the moment the reply text the user sees holds a whole first
  sentence (".", "!" or "?" then a space, or the end of the message).

The conversation runs twice on copies of the same memory: once as the agent builds prompts
(system instructions + core memory first and unchanged, so the server reuses the cached prefix),
and once with a different first line in every prompt (``[request N]``), which defeats the reuse.
``cache_speedup`` is the defeated first-sentence p50 over the cached one.

As in the app, every new memory is rated for importance in the background, by the same model
on the runtime's background server (through the gate that holds ratings back while a reply is
written); the next turn starts once the ratings are done, as if the user took that long to
answer.

``least_new_prompt_tokens`` is, per turn, what any prompt layout must read anew: the memories
retrieved for the message as the agent shows them and the message itself, counted with the
model's own vocabulary (the floor of the reading before the first token).

``--json`` prints ``{"<profile>": {"first_token_ms": {"p50", "p95"}, "first_sentence_ms":
{"p50", "p95"}, "cache_speedup", "defeated": {...the same two figures...}, "turns",
"replied", "least_new_prompt_tokens": {"p50", "p95"}}}``; otherwise a table. Progress goes to
stderr.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.stats import percentiles

CONVERSATION = (
    "Hi, I'm Sam. I just moved to Leeds for a new job.",
    "My sister Beatrix lives in Porto; remember that, please.",
    "What's a good way to keep track of houseplants?",
    "Remind me what I told you about my sister.",
    "I have a dentist appointment next Tuesday at 3.",
    "Can you suggest a quick vegetarian dinner?",
    "I prefer tea over coffee, by the way.",
    "What do you know about me so far?",
    "I'm learning Portuguese before visiting Beatrix.",
    "Give me one tip for remembering new words.",
    "My manager is called Priya.",
    "What should I pack for a weekend in Porto?",
    "I went running this morning, 5 kilometres.",
    "How far did I run today?",
    "Please keep my replies short from now on.",
    "What's on my calendar next week?",
    "I think I left my keys at the office.",
    "Suggest a name for a grey cat.",
    "Who is Priya?",
    "Thanks, that's all for now.",
)
_SENTENCE_END = re.compile(r"[.!?](\s|$)")
# Longest wait for the background importance ratings between two turns.
RATINGS_WAIT_S = 300.0


@dataclass
class Timing:
    first_token: list[float] = field(default_factory=list)
    first_sentence: list[float] = field(default_factory=list)
    replied: int = 0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Clocked:
    """The real client; notes when the first piece of each turn arrives, and (``defeat``)
    puts a new first line in every prompt so no prefix can be reused."""

    def __init__(self, client: Any, defeat: bool) -> None:
        self.client = client
        self.defeat = defeat
        self.first_piece: float | None = None
        self._requests = itertools.count(1)

    def stream(self, messages: Sequence[dict[str, str]], **options: Any) -> Iterator[str]:
        if self.defeat:
            first = dict(messages[0])
            first["content"] = f"[request {next(self._requests)}]\n{first['content']}"
            messages = [first, *messages[1:]]
        for piece in self.client.stream(messages, **options):
            if self.first_piece is None:
                self.first_piece = time.perf_counter()
            yield piece

    def complete(self, messages: Sequence[dict[str, str]], **options: Any) -> str:
        text: str = self.client.complete(messages, **options)
        return text

    def count_tokens(self, text: str) -> int:
        """As the app counts the window: with the client's own counter."""
        count: int = self.client.count_tokens(text)
        return count


def build_memory(folder: Path, count: int) -> None:
    from benchmarks.retrieval_scale import memory_texts, real_embedder, record_metadata
    from memory.stream import MemoryStream, NewMemory

    embedder = real_embedder()
    stream = MemoryStream(folder, embedder)
    times, importances = record_metadata(count)
    items = [
        NewMemory(text, importance=importance, created_at=when)
        for text, when, importance in zip(memory_texts(count), times, importances, strict=True)
    ]
    for start in range(0, len(items), 250):
        stream.add_many(items[start : start + 250], merge_duplicates=False)
    stream.close()


def converse(
    settings: Any, client: Any, background: Any, folder: Path, turns: int, defeat: bool
) -> Timing:
    from assistant.agent.events import UserText
    from assistant.agent.session import open_agent, open_stores
    from assistant.llm.priority import BackgroundLLM, ForegroundGate
    from benchmarks.retrieval_scale import real_embedder

    gate = ForegroundGate()
    # As in the app: each new memory is rated by the same LLM in the background, between turns.
    stores = open_stores(
        folder, real_embedder(), BackgroundLLM(background, gate), settings.agent.core_memory_chars
    )
    clocked = Clocked(client, defeat)
    agent = open_agent(settings, clocked, stores, gate)
    timing = Timing()
    # One untimed turn first: the model's weights paged in, the cache holding the prefix.
    agent.respond(UserText("Hello."))
    try:
        for text in itertools.islice(itertools.cycle(CONVERSATION), turns):
            heard: list[str] = []
            sentence_at: list[float] = []

            def listen(piece: str, heard: list[str] = heard, at: list[float] = sentence_at) -> None:
                heard.append(piece)
                if not at and _SENTENCE_END.search("".join(heard)):
                    at.append(time.perf_counter())

            # The user's think time: the ratings of the last turn's memories are done.
            stores.stream.wait_for_ratings(RATINGS_WAIT_S)
            clocked.first_piece = None
            started = time.perf_counter()
            turn = agent.respond(UserText(text), on_text=listen)
            ended = time.perf_counter()
            if clocked.first_piece is not None:
                timing.first_token.append((clocked.first_piece - started) * 1000)
            if turn.reply:
                timing.replied += 1
                timing.first_sentence.append(((sentence_at or [ended])[0] - started) * 1000)
            log(f"  {'defeated' if defeat else 'cached'}: {text[:40]!r} -> {turn.reply[:60]!r}")
    finally:
        stores.stream.close()
    return timing


def least_new_tokens(settings: Any, folder: Path, count: Any, turns: int) -> list[int]:
    """Per turn, the prompt tokens no layout can spare: the memories retrieved for the
    message (as the agent retrieves and shows them) and the message itself, each with its
    chat-template overhead, counted as ``count`` (the model's own counter) counts them."""
    from assistant.agent.agent import AgentConfig
    from assistant.agent.context import MESSAGE_OVERHEAD_TOKENS
    from assistant.agent.tools import memories_block
    from benchmarks.retrieval_scale import real_embedder
    from memory.stream import MemoryStream

    config = AgentConfig(retrieved_memories=settings.agent.retrieved_memories)
    stream = MemoryStream(folder, real_embedder())
    try:
        tokens = []
        for text in itertools.islice(itertools.cycle(CONVERSATION), turns):
            found = stream.retrieve(
                text,
                k=config.retrieved_memories,
                weights=config.retrieval_weights,
                touch=False,
            )
            block = memories_block([m.record for m in found])
            tokens.append(count(block) + count(text) + 2 * MESSAGE_OVERHEAD_TOKENS)
        return tokens
    finally:
        stream.close()


def bench_profile(profile: str, turns: int, memories: int) -> dict[str, Any]:
    from assistant.config import load_config
    from assistant.llm.runtime import LLMRuntime

    settings = load_config(flags={"profile": profile}).settings
    with tempfile.TemporaryDirectory(prefix="turn-bench-") as scratch:
        base = Path(scratch) / "memory"
        started = time.perf_counter()
        build_memory(base, memories)
        log(f"[{profile}] {memories} memories stored in {time.perf_counter() - started:.0f} s")
        runtime = LLMRuntime(settings)
        with runtime as client:
            background = runtime.start_background()
            floor = least_new_tokens(settings, base, client.count_tokens, turns)
            results = {}
            for defeat in (False, True):
                folder = Path(scratch) / ("defeated" if defeat else "cached")
                shutil.copytree(base, folder)
                results[defeat] = converse(settings, client, background, folder, turns, defeat)
    cached, defeated = results[False], results[True]
    speedup = statistics.median(defeated.first_sentence) / statistics.median(cached.first_sentence)
    return {
        "first_token_ms": percentiles(cached.first_token),
        "first_sentence_ms": percentiles(cached.first_sentence),
        "cache_speedup": speedup,
        "defeated": {
            "first_token_ms": percentiles(defeated.first_token),
            "first_sentence_ms": percentiles(defeated.first_sentence),
        },
        "turns": turns,
        "replied": cached.replied,
        "least_new_prompt_tokens": percentiles([float(t) for t in floor]),
    }


def table(report: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| profile | first token p50 / p95 ms | first sentence p50 / p95 ms | "
        "defeated: first sentence p50 / p95 ms | cache speedup | replied | "
        "least new prompt tokens p50 / p95 |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for profile, figures in report.items():
        token, sentence = figures["first_token_ms"], figures["first_sentence_ms"]
        defeated = figures["defeated"]["first_sentence_ms"]
        floor = figures["least_new_prompt_tokens"]
        lines.append(
            f"| {profile} | {token['p50']:.0f} / {token['p95']:.0f} | "
            f"{sentence['p50']:.0f} / {sentence['p95']:.0f} | "
            f"{defeated['p50']:.0f} / {defeated['p95']:.0f} | "
            f"{figures['cache_speedup']:.2f}x | {figures['replied']}/{figures['turns']} | "
            f"{floor['p50']:.0f} / {floor['p95']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--profiles", nargs="+", default=["fast", "quality"])
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.turns < 1 or args.memories < 1:
        parser.error("--turns and --memories must be at least 1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    report = {
        profile: bench_profile(profile, args.turns, args.memories) for profile in args.profiles
    }
    print(json.dumps(report) if args.json else table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
