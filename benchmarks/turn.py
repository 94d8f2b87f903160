"""How fast the agent answers, turn after turn, as the app runs it: from an event to the first
token, the first word and the first sentence of the reply, and how much new prompt the server
read, over a scripted conversation long enough to compact its window several times.

    python -m benchmarks.turn [--profiles fast quality] [--turns 40] [--memories 1000]
                              [--context-window 16384] [--pause-s 3] [--typing-cps C]
                              [--defeated-turns 8] [--json]

For each profile: the profile's local model on the runtime's servers (the conversation's and
the background one, as in the app), a memory of ``--memories`` varied stored records (the scale
benchmark's templates, really embedded), and an agent opened as the service opens it (the
compactor on the background server, a swapped-in summary read ahead) that gets
``--turns`` scripted user messages through ``Agent.respond``, each ``--pause-s`` seconds after
the reply before it ended (the time a spoken reply takes to be heard and the user to say the
next thing; 0 for none), and no turn waits for background work (importance ratings,
summaries) of the turn before: what is still running when the pause ends goes on beside the
turn, as in the app. The window is ``--context-window`` tokens (server and agent alike; the
app's by default), and compaction starts at the app's ``agent.compact_share`` of it, so the
turns compact it several times. With ``--typing-cps``, each message is
typed at that many characters a second after the pause, sent as drafts as the terminal app and
the service send them (each finished word; one read at a time, the newest draft next;
``Agent.prepare``), and sent for real (Enter) ``--enter-after-s`` after its last character;
the timings run from Enter. Per turn:

* ``first_token_ms``: from ``respond`` being called (retrieval, recording and prompt building
  included) to the first piece the LLM streams back;
* ``first_word_ms``: to the first piece of the reply text the user sees that holds a letter
  or digit (the first word starts);
* ``first_sentence_ms``: to the moment the reply text holds a whole first sentence (".", "!"
  or "?" then a space, or the end of the message);
* ``new_prompt_tokens``: the prompt tokens the conversation's server read anew over all the
  turn's requests (llama-server's ``timings.prompt_n``; not reported by llama-cpp-python's).

``compactions`` counts the summaries swapped in between turns, ``flushes`` the blocking ones
inside a turn (the fallback for an overflow). Then ``--defeated-turns`` turns of the same
conversation with a different first line in every prompt (``[request N]``), which defeats
all reuse; ``cache_speedup`` is the defeated first-sentence p50 over the first
``--defeated-turns`` turns' of the reused run.

``least_new_prompt_tokens`` is, per turn, what any prompt layout must read anew: the memories
retrieved for the message as the agent shows them and the message itself, counted with the
model's own vocabulary.

``--json`` prints ``{"<profile>": {"first_token_ms", "first_word_ms", "first_sentence_ms",
"new_prompt_tokens", "least_new_prompt_tokens" (each {"p50", "p95", "max"}), "cache_speedup",
"defeated": {"first_token_ms", "first_sentence_ms"}, "turns", "replied", "compactions",
"flushes", "server", "context_window", "pause_s", "typing_cps", "enter_after_s",
"replies_repeating_the_user", "replies_copying_an_earlier_one" (each "k/n")}}``; otherwise a
table.
Per-turn lines go to stderr: the tokens each request of the turn read (``a+b``), the first
token and word, when the request went out (``asked at``), when a draft read still under way
at Enter ended (the turn's request waits for it on the server), and whether a summary was
swapped in before the turn (during the pause) or after it (once its reply was out).
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
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.replies import copied_share, repeated_share
from benchmarks.stats import percentiles

if TYPE_CHECKING:
    from assistant.llm.messages import Message

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
_WORD = re.compile(r"\w")
# The app's window: compaction starts at its agent.compact_share, so 40 turns compact it
# several times.
CONTEXT_WINDOW = 16384


@dataclass
class Timing:
    first_token: list[float] = field(default_factory=list)
    first_word: list[float] = field(default_factory=list)
    first_sentence: list[float] = field(default_factory=list)
    new_tokens: list[float] = field(default_factory=list)
    replied: int = 0
    # (the user's message, the reply) of each turn that replied.
    exchanges: list[tuple[str, str]] = field(default_factory=list)
    compactions: int = 0
    flushes: int = 0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Drafts:
    """Drafts read ahead as the service reads them: one at a time, and of those sent during
    a read only the newest next; a draft that ends a sentence has its reply asked for at once
    (``Agent.speculate``), not queued behind the read under way."""

    def __init__(self, agent: Any) -> None:
        self._agent = agent
        self._lock = threading.Lock()
        self._reading = False
        self._next: str | None = None
        # When the last read ended (a turn sent during a read waits for it on the server).
        self.read_ended = 0.0

    def send(self, text: str) -> None:
        from assistant.protocol.conversation import SENTENCE_ENDS

        if text.endswith(SENTENCE_ENDS):
            with self._lock:
                self._next = None
            threading.Thread(target=self._agent.speculate, args=(text,), daemon=True).start()
            return
        with self._lock:
            if self._reading:
                self._next = text
                return
            self._reading = True
        threading.Thread(target=self._read, args=(text,), daemon=True).start()

    def sent_for_real(self) -> None:
        """Enter: drafts not yet read are dropped (a read under way goes on)."""
        with self._lock:
            self._next = None

    def _read(self, text: str | None) -> None:
        while text is not None:
            self._agent.prepare(text)
            with self._lock:
                self.read_ended = time.perf_counter()
                text, self._next = self._next, None
                self._reading = text is not None


def type_out(text: str, cps: float, drafts: Drafts) -> None:
    """Type ``text`` at ``cps`` characters a second, sending a draft at each finished word
    (the same text once, as the terminal app does)."""
    from assistant.protocol.conversation import DRAFT_WORD_ENDS

    sent = ""
    for end in range(1, len(text) + 1):
        time.sleep(1 / cps)
        draft = text[:end].strip()
        if text[:end].endswith(DRAFT_WORD_ENDS) and draft != sent:
            sent = draft
            drafts.send(draft)


class Clocked:
    """The real client; notes when the first piece of each turn arrives and the prompt tokens
    each request read anew, and (``defeat``) puts a new first line in every prompt so no
    prefix can be reused."""

    def __init__(self, client: Any, defeat: bool) -> None:
        self.client = client
        self.defeat = defeat
        self.first_piece: float | None = None
        self.asked: float | None = None
        self.read: list[int] = []
        self._requests = itertools.count(1)

    def stream(self, messages: Sequence[Message], **options: Any) -> Iterator[str]:
        if self.defeat:
            first = messages[0].copy()
            first["content"] = f"[request {next(self._requests)}]\n{first['content']}"
            messages = [first, *messages[1:]]
        if self.asked is None:
            self.asked = time.perf_counter()
        for piece in self.client.stream(messages, **options):
            if self.first_piece is None:
                self.first_piece = time.perf_counter()
            yield piece
        reading = self.client.last_reading
        if reading is not None:
            self.read.append(reading.read)

    def complete(self, messages: Sequence[Message], **options: Any) -> str:
        text: str = self.client.complete(messages, **options)
        return text

    def count_tokens(self, text: str) -> int:
        """As the app counts the window: with the client's own counter."""
        count: int = self.client.count_tokens(text)
        return count


def build_memory(folder: Path, count: int) -> None:
    from benchmarks.retrieval_scale import memory_texts, real_embedder, record_metadata
    from memory.database import open_database
    from memory.locking import WriteLock
    from memory.stream import MemoryStream, NewMemory

    embedder = real_embedder()
    stream = MemoryStream(open_database(folder), WriteLock(folder / "memory.lock"), embedder)
    times, importances = record_metadata(count)
    items = [
        NewMemory(text, importance=importance, created_at=when)
        for text, when, importance in zip(memory_texts(count), times, importances, strict=True)
    ]
    for start in range(0, len(items), 250):
        stream.add_many(items[start : start + 250], merge_duplicates=False)
    stream.close()


def converse(
    settings: Any,
    runtime: Any,
    folder: Path,
    turns: int,
    defeat: bool,
    pause_s: float,
    typing: tuple[float, float] | None,
) -> Timing:
    from assistant.agent.events import UserText
    from assistant.agent.wiring import open_agent, open_stores
    from assistant.llm.priority import BackgroundLLM, ForegroundGate
    from benchmarks.retrieval_scale import real_embedder

    gate = ForegroundGate()
    # As in the app: each new memory is rated on the importance scale as it is stored, and
    # the window's summaries, on the idle-priority background server, do not give way to
    # replies.
    stores = open_stores(folder, real_embedder(), settings.agent.core_memory_chars)
    clocked = Clocked(runtime.client, defeat)
    summaries = BackgroundLLM(runtime.background_client, gate, lambda: True)
    agent = open_agent(settings, clocked, stores, gate, background=summaries)
    agent.reads_ahead = True  # as the service sets it for a local server
    timing = Timing()
    drafts = Drafts(agent)
    label = "defeated" if defeat else "reused"
    # One untimed turn first: the model's weights paged in, the cache holding the prefix.
    agent.respond(UserText("Hello."))
    try:
        for number, text in enumerate(itertools.islice(itertools.cycle(CONVERSATION), turns)):
            heard: list[str] = []
            marks: dict[str, float] = {}

            def listen(
                piece: str, heard: list[str] = heard, marks: dict[str, float] = marks
            ) -> None:
                heard.append(piece)
                now = time.perf_counter()
                if "word" not in marks and _WORD.search(piece):
                    marks["word"] = now
                if "sentence" not in marks and _SENTENCE_END.search("".join(heard)):
                    marks["sentence"] = now

            swaps = agent.compactions
            time.sleep(pause_s)
            if typing is not None and not defeat:
                cps, enter_after_s = typing
                type_out(text, cps, drafts)
                time.sleep(enter_after_s)
                drafts.sent_for_real()
            clocked.first_piece = clocked.asked = None
            clocked.read = []
            # Swapped in during the pause before this turn (the user not writing yet).
            compacted = agent.compactions > swaps
            swaps = agent.compactions
            started = time.perf_counter()
            turn = agent.respond(UserText(text), on_text=listen)
            ended = time.perf_counter()
            # Swapped in at its end, after the reply (finished during it or its drafts).
            compacted_after = agent.compactions > swaps
            timing.compactions = agent.compactions
            timing.flushes += turn.flushed
            if clocked.first_piece is not None:
                timing.first_token.append((clocked.first_piece - started) * 1000)
            if clocked.read:
                timing.new_tokens.append(float(sum(clocked.read)))
            if turn.reply:
                timing.replied += 1
                timing.exchanges.append((text, turn.reply))
                timing.first_word.append((marks.get("word", ended) - started) * 1000)
                timing.first_sentence.append((marks.get("sentence", ended) - started) * 1000)
            log(
                f"  {label} {number + 1:>2}: read {'+'.join(map(str, clocked.read)) or 0:>7} "
                "tokens, first token "
                f"{timing.first_token[-1] if clocked.first_piece else float('nan'):>6.0f} ms, "
                f"first word {timing.first_word[-1] if turn.reply else float('nan'):>6.0f} ms"
                f"{_since(clocked.asked, started, ', asked at')}"
                f"{_since(drafts.read_ended, started, ', a draft read ended at')}"
                f"{', compacted before it' if compacted else ''}"
                f"{', compacted after it' if compacted_after else ''}"
                f"{', FLUSHED inside it' if turn.flushed else ''}: {turn.reply!r}"
            )
    finally:
        stores.stream.close()
    return timing


def _since(moment: float | None, start: float, label: str) -> str:
    """`` <label> N ms`` for a moment after ``start``, else nothing."""
    if moment is None or moment <= start:
        return ""
    return f"{label} {(moment - start) * 1000:.0f} ms"


def least_new_tokens(settings: Any, folder: Path, count: Any, turns: int) -> list[int]:
    """Per turn, the prompt tokens no layout can spare: the memories retrieved for the
    message (as the agent retrieves and shows them) and the message itself, each with its
    chat-template overhead, counted as ``count`` (the model's own counter) counts them."""
    from assistant.agent.context import MESSAGE_OVERHEAD_TOKENS
    from assistant.agent.tools import memories_block
    from assistant.agent.turn import AgentConfig
    from benchmarks.retrieval_scale import real_embedder
    from memory.database import open_database
    from memory.locking import WriteLock
    from memory.stream import MemoryStream

    config = AgentConfig(retrieved_memories=settings.agent.retrieved_memories)
    stream = MemoryStream(open_database(folder), WriteLock(folder / "memory.lock"), real_embedder())
    try:
        tokens = []
        for text in itertools.islice(itertools.cycle(CONVERSATION), turns):
            found = stream.retrieve(
                text,
                k=config.retrieved_memories,
                weights=config.retrieval_weights,
                touch=False,
            )
            block = memories_block([m.record for m in found], text, stream.now())
            tokens.append(count(block) + count(text) + 2 * MESSAGE_OVERHEAD_TOKENS)
        return tokens
    finally:
        stream.close()


def bench_profile(
    profile: str,
    turns: int,
    memories: int,
    window: int,
    defeated_turns: int,
    pause_s: float,
    typing: tuple[float, float] | None,
) -> dict[str, Any]:
    from assistant.config import load_config
    from assistant.llm.runtime import LLMRuntime

    # Background work (ratings) may still be writing when the run ends.
    with tempfile.TemporaryDirectory(prefix="turn-bench-", ignore_cleanup_errors=True) as scratch:
        flags = {"profile": profile, "llm.context_window": str(window)}
        flags |= {"data_dir": str(Path(scratch) / "data"), "cache_dir": str(Path(scratch) / "c")}
        settings = load_config(flags=flags).settings
        # The assembled weights are read from the usual cache, not assembled again.
        settings = settings.model_copy(update={"cache_dir": load_config().settings.cache_dir})
        base = Path(scratch) / "memory"
        started = time.perf_counter()
        build_memory(base, memories)
        log(f"[{profile}] {memories} memories stored in {time.perf_counter() - started:.0f} s")
        runtime = LLMRuntime(settings)
        with runtime as client:
            runtime.start_background()
            floor = least_new_tokens(settings, base, client.count_tokens, turns)
            results = {}
            for defeat, count in ((False, turns), (True, defeated_turns)):
                folder = Path(scratch) / ("defeated" if defeat else "reused")
                shutil.copytree(base, folder)
                run_settings = settings.model_copy(update={"data_dir": folder})
                results[defeat] = converse(
                    run_settings, runtime, folder, count, defeat, pause_s, typing
                )
            server = runtime.server_name
    reused, defeated = results[False], results[True]
    speedup = statistics.median(defeated.first_sentence) / statistics.median(
        reused.first_sentence[:defeated_turns]
    )
    return {
        "first_token_ms": percentiles(reused.first_token),
        "first_word_ms": percentiles(reused.first_word),
        "first_sentence_ms": percentiles(reused.first_sentence),
        "new_prompt_tokens": percentiles(reused.new_tokens),
        "cache_speedup": speedup,
        "defeated": {
            "first_token_ms": percentiles(defeated.first_token),
            "first_sentence_ms": percentiles(defeated.first_sentence),
        },
        "turns": turns,
        "replied": reused.replied,
        # Replies that only repeat the user's message (benchmarks/replies.py).
        "replies_repeating_the_user": repeated_share(reused.exchanges),
        "replies_copying_an_earlier_one": copied_share([reply for _, reply in reused.exchanges]),
        "compactions": reused.compactions,
        "flushes": reused.flushes,
        "server": server,
        "context_window": window,
        "pause_s": pause_s,
        "typing_cps": typing[0] if typing is not None else None,
        "enter_after_s": typing[1] if typing is not None else None,
        "least_new_prompt_tokens": percentiles([float(t) for t in floor]),
    }


def table(report: dict[str, dict[str, Any]]) -> str:
    def cell(figures: dict[str, float]) -> str:
        return " / ".join(f"{figures[k]:.0f}" for k in ("p50", "p95", "max"))

    lines = [
        "p50 / p95 / max",
        "",
        "| profile | server | first token ms | first word ms | first sentence ms | "
        "new prompt tokens | least new prompt tokens | defeated: first sentence ms | "
        "cache speedup | compactions (flushes) | replied | replies repeating the user | "
        "replies copying an earlier one |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for profile, figures in report.items():
        lines.append(
            f"| {profile} | {figures['server']} | {cell(figures['first_token_ms'])} | "
            f"{cell(figures['first_word_ms'])} | {cell(figures['first_sentence_ms'])} | "
            f"{cell(figures['new_prompt_tokens'])} | "
            f"{cell(figures['least_new_prompt_tokens'])} | "
            f"{cell(figures['defeated']['first_sentence_ms'])} | "
            f"{figures['cache_speedup']:.2f}x | {figures['compactions']} "
            f"({figures['flushes']}) | {figures['replied']}/{figures['turns']} | "
            f"{figures['replies_repeating_the_user']} | "
            f"{figures['replies_copying_an_earlier_one']} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--profiles", nargs="+", default=["fast", "quality"])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--context-window", type=int, default=CONTEXT_WINDOW)
    parser.add_argument("--defeated-turns", type=int, default=8)
    parser.add_argument("--pause-s", type=float, default=3.0)
    parser.add_argument("--typing-cps", type=float, default=None)
    parser.add_argument("--enter-after-s", type=float, default=0.3)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if min(args.turns, args.memories, args.defeated_turns) < 1:
        parser.error("--turns, --memories and --defeated-turns must be at least 1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    report = {
        profile: bench_profile(
            profile,
            args.turns,
            args.memories,
            args.context_window,
            args.defeated_turns,
            args.pause_s,
            (args.typing_cps, args.enter_after_s) if args.typing_cps else None,
        )
        for profile in args.profiles
    }
    print(json.dumps(report) if args.json else table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
