"""Compaction off the reply path: when the window fills past a share after a turn, the oldest
messages are summarised in the background (on the background server, giving way to replies),
and swapped for the summary at the next turn boundary: they leave the window and the summary
is appended as a note (context.py says why at the end). The blocking flush inside a turn
remains only for a context-overflow error: no turn waits for a summary otherwise.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass

from assistant.agent.context import transcript
from assistant.llm.client import LLMCancelled, LLMError, LLMReplyError
from assistant.llm.messages import JsonSchema, Message
from assistant.llm.priority import ForegroundGate
from assistant.llm.protocols import CancellableJsonLLM

log = logging.getLogger(__name__)

SUMMARY_WORDS = 120
# The most of the evicted messages one summary call reads (the rest is in recall storage).
SUMMARY_INPUT_CHARS = 6_000
SUMMARY_SCHEMA: JsonSchema = {
    "type": "object",
    "properties": {"summary": {"type": "string"}},
    "required": ["summary"],
}

Summariser = Callable[[list[Message]], str]


def summary_prompt(previous: str, evicted: Sequence[Message]) -> list[Message]:
    text = transcript(evicted)[-SUMMARY_INPUT_CHARS:]
    return [
        {
            "role": "system",
            "content": (
                "You keep a running summary of a conversation between a user and their "
                f"assistant, Brain OS. Write the new summary in at most {SUMMARY_WORDS} "
                "words: the facts, names, dates, requests and decisions that matter. No "
                "preamble."
            ),
        },
        {
            "role": "user",
            "content": f"Summary so far:\n{previous or '(none)'}\n\nNew messages:\n{text}",
        },
    ]


def summarise(ask: Summariser, previous: str, evicted: Sequence[Message]) -> str:
    """The new recursive summary; the messages' opening lines where the LLM gives none.
    Raises :class:`LLMCancelled` where the request was cancelled (the service closing):
    clipped lines in place of a summary would then stay in every prompt after a restart."""
    try:
        summary = once_each(ask(summary_prompt(previous, evicted)))
    except LLMCancelled:
        raise
    except LLMError as error:
        log.warning("summary failed (%s); keeping the messages' opening lines instead", error)
        summary = ""
    return summary.strip() or opening_lines(previous, evicted)


def opening_lines(previous: str, evicted: Sequence[Message]) -> str:
    """The summary so far and each evicted message's opening, the newest whole lines that fit
    in a quarter of a summary's input: what stands for a summary the LLM did not write."""
    lines = [line for line in (previous, *(m["content"][:160] for m in evicted)) if line]
    kept: list[str] = []
    room = SUMMARY_INPUT_CHARS // 4
    for line in reversed(lines):
        if len(line) + 1 > room:
            break
        kept.append(line)
        room -= len(line) + 1
    return "\n".join(reversed(kept)).strip()


def once_each(summary: str) -> str:
    """The summary with each sentence kept once: the 0.5B model can write one sentence over
    and over until the token limit, and a summary is in every prompt from then on."""
    sentences = re.split(r"(?<=[.!?])\s+", summary.strip())
    kept: dict[str, str] = {}
    for sentence in sentences:
        kept.setdefault(" ".join(sentence.lower().split()), sentence)
    return " ".join(kept.values()) if len(kept) < len(sentences) else summary.strip()


def json_summariser(llm: CancellableJsonLLM) -> Summariser:
    """Ask ``llm`` (the background one) for the summary as a grammar-held JSON string."""

    def ask(prompt: list[Message]) -> str:
        # The 0.5B model may write on past the word limit (repeating itself) until the token
        # limit cuts the string: what it wrote up to there is kept, so the limit can stay
        # near the words asked for (each token written costs the background ~40 ms).
        try:
            reply = llm.complete_json(prompt, SUMMARY_SCHEMA, max_tokens=SUMMARY_WORDS * 2)
        except LLMReplyError as error:
            return cut_summary(error.reply)
        summary = reply.get("summary")
        return summary if isinstance(summary, str) else ""

    return ask


def cut_summary(reply: str) -> str:
    """The summary's text from a JSON reply cut off inside its string, up to its last whole
    sentence ("" if the reply is not such a cut-off summary)."""
    opening = re.match(r'\s*\{\s*"summary"\s*:\s*"', reply)
    if opening is None:
        return ""
    body = reply[opening.end() :].removesuffix("\\")
    try:
        text = str(json.loads(f'"{body}"', strict=False))
    except ValueError:
        text = body
    sentences = re.split(r"(?<=[.!?])\s+", text.strip())
    whole = sentences[:-1] if len(sentences) > 1 else sentences
    return " ".join(whole).strip()


@dataclass(frozen=True)
class CompactionStart:
    """What a compaction replaces: ``covers`` (the FIFO's oldest messages), summarised into
    ``previous`` (the summary so far)."""

    previous: str
    covers: tuple[Message, ...]


@dataclass(frozen=True)
class Compaction:
    """A summary ready to replace ``start.covers``."""

    summary: str
    start: CompactionStart


class Compactor:
    """Summarises in a thread of its own; ``take`` hands the result over once, at a turn
    boundary of the caller's choosing. ``on_ready`` (set by the agent) is told when a summary
    is done."""

    def __init__(self, ask: Summariser, gate: ForegroundGate | None = None) -> None:
        self.ask = ask  # also what a blocking flush summarises with
        # Told the summary is urgent work while it is written (``ForegroundGate.urgent``).
        self.gate = gate
        self.on_ready: Callable[[], None] = lambda: None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._done: Compaction | None = None

    @property
    def busy(self) -> bool:
        """A summary is being written or waits to be taken."""
        with self._lock:
            return self._thread is not None or self._done is not None

    def start(self, start: CompactionStart) -> bool:
        """Summarise ``start.covers`` into ``start.previous``; False if a compaction is
        already under way."""
        with self._lock:
            if self._thread is not None or self._done is not None or not start.covers:
                return False
            self._thread = threading.Thread(
                target=self._run, args=(start,), name="context-compaction", daemon=True
            )
            self._thread.start()
        return True

    def take(self) -> Compaction | None:
        with self._lock:
            done, self._done = self._done, None
        return done

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the summary under way (tests and benchmarks); True when none is."""
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return not (thread is not None and thread.is_alive())

    def _run(self, start: CompactionStart) -> None:
        try:
            with self.gate.urgent() if self.gate is not None else nullcontext():
                summary = summarise(self.ask, start.previous, start.covers)
        except LLMCancelled:
            # The messages stay in the window; the next compaction due summarises them.
            log.info("summary cancelled; its %d messages stay in the window", len(start.covers))
            with self._lock:
                self._thread = None
            return
        with self._lock:
            self._done = Compaction(summary, start)
            self._thread = None
        log.info("summarised %d messages in the background", len(start.covers))
        self.on_ready()
