"""Importance at creation (Park et al. 2023, section 4.1): the LLM rates each new record 1-10.

Rating never blocks an add: records queue up and a background thread rates them in batches.
A reply that is not an integer 1-10 is retried once; then DEFAULT_IMPORTANCE is stored and the
record is left in state ``fallback`` for a later :meth:`ImportanceRater.rate_pending`.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memory.llm import JsonSchema, StructuredLLM
from memory.records import DEFAULT_IMPORTANCE

log = logging.getLogger(__name__)

PROMPT = (
    "On the scale of 1 to 10, where 1 is purely mundane (e.g., brushing teeth, making bed) and "
    "10 is extremely poignant (e.g., a break up, college acceptance), rate the likely "
    "poignancy of the following piece of memory.\nMemory: {text}\nRating: <fill in>"
)
SCHEMA: JsonSchema = {
    "type": "object",
    "properties": {"rating": {"type": "integer", "minimum": 1, "maximum": 10}},
    "required": ["rating"],
}
ATTEMPTS = 2
BATCH_SIZE = 16
MAX_TEXT_CHARS = 2_000


@dataclass(frozen=True)
class Rating:
    record_id: str
    importance: int
    rated: bool  # False: the LLM failed and DEFAULT_IMPORTANCE stands in


def rate_text(llm: StructuredLLM, text: str) -> int | None:
    """The LLM's 1-10 rating of ``text``, or None after ATTEMPTS unusable replies."""
    messages = [{"role": "user", "content": PROMPT.format(text=text[:MAX_TEXT_CHARS])}]
    for attempt in range(1, ATTEMPTS + 1):
        try:
            reply = llm.complete_json(messages, SCHEMA, max_tokens=16)
        except Exception as error:  # any client failure means "no rating this time"
            log.warning("importance rating failed (attempt %d): %s", attempt, error)
            continue
        value = reply.get("rating")
        if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 10:
            return value
        log.warning("importance rating was not an integer 1-10 (attempt %d): %r", attempt, reply)
    return None


class ImportanceRater:
    """Rates queued records on a background thread and hands each result to ``apply``."""

    def __init__(self, llm: StructuredLLM, apply: Callable[[Sequence[Rating]], None]) -> None:
        self._llm = llm
        self._apply = apply
        self._queue: queue.Queue[tuple[str, str] | None] = queue.Queue()
        self._idle = threading.Event()
        self._idle.set()
        self._thread = threading.Thread(target=self._run, name="importance-rater", daemon=True)
        self._thread.start()

    def submit(self, record_id: str, text: str) -> None:
        self._idle.clear()
        self._queue.put((record_id, text))

    def pending(self) -> int:
        """Records waiting for a rating (the batch being rated not counted)."""
        return self._queue.qsize()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """True once every submitted record has been rated (or given its fallback)."""
        return self._idle.wait(timeout)

    def close(self) -> None:
        self._queue.put(None)
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            batch = [item]
            while len(batch) < BATCH_SIZE:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._rate(batch)
                    return
                batch.append(more)
            self._rate(batch)
            if self._queue.empty():
                self._idle.set()

    def _rate(self, batch: list[tuple[str, str]]) -> None:
        ratings = []
        for record_id, text in batch:
            value = rate_text(self._llm, text)
            ratings.append(
                Rating(
                    record_id, value if value is not None else DEFAULT_IMPORTANCE, value is not None
                )
            )
        try:
            self._apply(ratings)
        except Exception:  # the store reports its own errors; the rater must keep running
            log.exception("could not store %d importance ratings", len(ratings))
