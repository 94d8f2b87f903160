"""What a background request between two turns costs the next turn: asked of the conversation's
own local server, or of the background server the runtime starts for such work.

    python -m benchmarks.background_server [--profile fast] [--repeats 5] [--json]

llama-cpp-python's server keeps the state of the last prompt it read, and the agent's next
turn reuses it (only the new message is read). The knowledge graph's extractor asks about each
new memory in between, with a different prompt (until 2026-11-26 the importance rater did too;
it no longer asks a model). A local runtime (``LLMRuntime``) with its background server; a
conversation prompt of about 1,000 tokens (the agent's real instructions and tools, core
memory, a dialogue) read once, untimed; then ``--repeats`` times, for each place the request
can go (the same server, the background server): one real extraction of a new memory's facts
(memory/graph/extract.py's prompt and schema), then the conversation with one more user
message, timed from the request to its first streamed piece. ``nothing_before_ms`` is the same
request with nothing asked before it; ``speedup`` is the same-server p50 over the
background-server p50.

Then the guarantee that background work never slows a reply: a whole reply (``REPLY_TOKENS``
tokens) on the conversation's server, timed from the request to its last piece, with the
background server idle (``reply_idle_ms``) and while it reads a long prompt and writes
(``reply_busy_ms``, a summary of about 3,000 tokens of talk, sent just before the reply), and
the same with the background server paused for the reply as the app pauses it
(``reply_paused_ms``: the foreground gate and ``BackgroundPause``, assistant/llm/pausing.py).
``busy_slowdown`` and ``paused_slowdown`` are busy and paused p50 over idle p50 (1.0: no
slower).
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from benchmarks.stats import percentiles

if TYPE_CHECKING:
    from assistant.llm.messages import Message


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def conversation() -> list[Message]:
    from assistant.agent.instructions import instructions

    core = (
        "## Core memory\n<persona>\nBrain OS: warm, brief, practical.\n</persona>\n"
        "<human>\nSam, lives in Leeds, works as a nurse, sister Beatrix in Porto, prefers tea.\n"
        "</human>"
    )
    turns = [
        ("user", "Hi, I'm Sam. I just moved to Leeds for a new job at the hospital."),
        ("assistant", "Welcome to Leeds, Sam! How is the new job going so far?"),
        ("user", "Busy, but good. My sister Beatrix lives in Porto; I want to visit her."),
        ("assistant", "Porto is lovely. Would you like help planning a weekend there?"),
        ("user", "Yes, maybe in May. I'm also learning Portuguese before I go."),
        ("assistant", "Great idea. Ten minutes a day with spaced repetition works well."),
        ("user", "I have a dentist appointment next Tuesday at 3, remember that."),
        ("assistant", "Noted: dentist next Tuesday at 3 pm."),
    ]
    messages: list[Message] = [{"role": "system", "content": f"{instructions()}\n\n{core}"}]
    messages += [{"role": role, "content": text} for role, text in turns]
    return messages


def first_piece_ms(client: Any, messages: Sequence[Message]) -> float:
    started = time.perf_counter()
    pieces = client.stream(messages, max_tokens=8, temperature=0.0)
    try:
        next(pieces, None)  # a prompt that ends with the assistant's turn may get no text
    finally:
        pieces.close()
    return (time.perf_counter() - started) * 1000


REPLY_TOKENS = 48


def whole_reply_ms(client: Any, messages: Sequence[Message]) -> float:
    started = time.perf_counter()
    for _ in client.stream(messages, max_tokens=REPLY_TOKENS, temperature=0.0):
        pass
    return (time.perf_counter() - started) * 1000


def long_background_request(background: Any, repeat: int) -> None:
    """What a compaction or a reflection sends: a long transcript to summarise."""
    talk = "\n".join(f"user: {text}" for _, text in conversation()[1:] * 14)
    background.complete(
        [{"role": "user", "content": f"({repeat}) Summarise this conversation:\n{talk}"}],
        max_tokens=200,
        temperature=0.0,
    )


def reply_under_load(
    client: Any, background: Any, pause: Callable[[bool], None], repeats: int
) -> dict[str, list[float]]:
    from assistant.llm.pausing import BackgroundPause
    from assistant.llm.priority import ForegroundGate

    gate = ForegroundGate()
    gate.listen(BackgroundPause(pause).foreground)
    times: dict[str, list[float]] = {"reply_idle": [], "reply_busy": [], "reply_paused": []}
    prompt = conversation()
    for repeat in range(repeats):
        asked: list[Message] = [
            *prompt,
            {"role": "user", "content": f"Tell me about Porto ({repeat})."},
        ]
        times["reply_idle"].append(whole_reply_ms(client, asked))
        # The same question both ways (a reply's length sets its time), in turn first.
        places = (
            ("reply_busy", "reply_paused") if repeat % 2 == 0 else ("reply_paused", "reply_busy")
        )
        for place in places:
            worker = threading.Thread(target=long_background_request, args=(background, repeat))
            worker.start()
            time.sleep(0.2)  # the background server is reading when the reply is asked
            question = f"Tell me about Leeds ({repeat}, {place.removeprefix('reply_')})."
            asked = [*prompt, {"role": "user", "content": question}]
            if place == "reply_paused":
                with gate.foreground():
                    times[place].append(whole_reply_ms(client, asked))
            else:
                times[place].append(whole_reply_ms(client, asked))
            worker.join()
        log(
            f"  reply {repeat + 1}: "
            + ", ".join(f"{place} {times[place][-1]:.0f} ms" for place in times)
        )
    return times


def measure(settings: Any, repeats: int) -> dict[str, Any]:
    from assistant.llm.runtime import LLMRuntime
    from memory.graph.extract import extract

    runtime = LLMRuntime(settings)
    with runtime as client:
        background = runtime.start_background()
        prompt = conversation()
        first_piece_ms(client, prompt)  # read once, untimed
        times: dict[str, list[float]] = {"nothing_before": [], "same_server": [], "background": []}
        asked_of = {"nothing_before": None, "same_server": client, "background": background}
        for repeat in range(repeats):
            for place, llm in asked_of.items():
                if llm is not None:
                    extract(llm, [f"User: My friend Rui bought a blue bicycle ({repeat})."])
                # A question of its own each time: only it is new to the server.
                question = f"What did I say about Porto? ({repeat}, {place})"
                asked: list[Message] = [*prompt, {"role": "user", "content": question}]
                times[place].append(first_piece_ms(client, asked))
            log(
                f"  repeat {repeat + 1}: "
                + ", ".join(f"{place} {values[-1]:.0f} ms" for place, values in times.items())
            )
        assert runtime.background_server is not None, "a local runtime has one"
        times |= reply_under_load(client, background, runtime.background_server.pause, repeats)
        server = runtime.server_name
    return {"server": server} | {f"{p}_ms": percentiles(values) for p, values in times.items()}


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
    figures = measure(settings, args.repeats)
    report = {
        "profile": args.profile,
        **figures,
        "speedup": figures["same_server_ms"]["p50"] / figures["background_ms"]["p50"],
        "busy_slowdown": figures["reply_busy_ms"]["p50"] / figures["reply_idle_ms"]["p50"],
        "paused_slowdown": figures["reply_paused_ms"]["p50"] / figures["reply_idle_ms"]["p50"],
    }
    if args.json:
        print(json.dumps(report))
        return 0
    print(f"server: {figures['server']}")
    print("| measured | p50 ms | p95 ms | max ms |")
    print("| --- | --- | --- | --- |")
    for place, label in (
        ("nothing_before", "next turn's first piece, nothing asked before it"),
        ("same_server", "next turn's first piece, after an extraction on the same server"),
        ("background", "next turn's first piece, after an extraction on the background server"),
        ("reply_idle", f"a whole {REPLY_TOKENS}-token reply, background server idle"),
        ("reply_busy", f"a whole {REPLY_TOKENS}-token reply, background server busy"),
        ("reply_paused", f"a whole {REPLY_TOKENS}-token reply, background server paused"),
    ):
        shown = figures[f"{place}_ms"]
        print(f"| {label} | {shown['p50']:.0f} | {shown['p95']:.0f} | {shown['max']:.0f} |")
    print(f"speedup (p50, same server / background server): {report['speedup']:.1f}x")
    print(f"busy / idle reply (p50): {report['busy_slowdown']:.2f}x")
    print(f"paused / idle reply (p50): {report['paused_slowdown']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
