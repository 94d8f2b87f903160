"""Reflection (Park et al. 2023, section 4.2): higher-level thoughts drawn from the memory stream.

When the importance of the events perceived since the last reflection adds up to a threshold
(150), the agent reflects:

1. the 100 most recent records are shown to the LLM, numbered;
2. it asks for the 3 most salient high-level questions about their subjects;
3. each question retrieves its own relevant records (the paper's retrieval), numbered afresh;
4. the LLM infers up to 5 insights from them, each citing the statements it rests on;
5. the cited numbers become the record ids the insight cites as evidence;
6. the insights are stored as ``reflection`` records, all in one commit.

Reflections are records like any other, so a later reflection can cite an earlier one: a tree
(:meth:`MemoryStream.evidence_tree`). A reply that does not fit its schema is asked for once
more, then its step is skipped; LLM problems are logged, never raised. Nothing is written until
every LLM call is done, so a cancelled or failed run leaves no half-written set of reflections.
:class:`ReflectionWorker` runs all this on a background thread, off the reply path.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from memory.llm import JsonSchema, Message, StructuredLLM
from memory.mirror import to_us
from memory.records import MemoryRecord
from memory.stream import Filters, MemoryStream, NewMemory
from memory.worker import BackgroundWorker

log = logging.getLogger(__name__)
T = TypeVar("T")

QUESTIONS_PROMPT = (
    "{statements}\n\n"
    "Given only the information above, what are {count} most salient high-level questions we "
    "can answer about the subjects in the statements?\n"
    'Reply in JSON: {{"questions": ["<question>", ...]}}'
)
INSIGHTS_PROMPT = (
    "Statements:\n{statements}\n\n"
    "What {count} high-level insights can you infer from the above statements? "
    "(example format: insight (because of 1, 5, 3))\n"
    'Reply in JSON: {{"insights": [{{"insight": "<insight>", "because": [1, 5, 3]}}, ...]}}'
)
ATTEMPTS = 2
# One statement shown to the LLM is clipped to this, and one list of statements to
# PROMPT_CHARS, so that both prompts fit a small local model's 4096-token context.
STATEMENT_CHARS = 300
PROMPT_CHARS = 8_000
QUESTION_TOKENS = 300
INSIGHT_TOKENS = 800
# After a reflection that stored nothing (the LLM down or no usable reply), the worker waits
# this long before it tries again, twice as long after each further one, up to the most.
RETRY_FIRST_S = 120.0
RETRY_MOST_S = 1800.0
# The "(because of 1, 5, 3)" of the paper's example format, if the model also wrote it inline.
_INLINE_CITATION = re.compile(r"\s*\(because of[^)]*\)\s*\.?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Insight:
    """One insight as the LLM stated it: its text and the statement numbers it cites."""

    text: str
    because: tuple[int, ...]


class _Cancelled(Exception):
    """The run was asked to stop between two LLM calls."""


def questions_schema(count: int) -> JsonSchema:
    """Step 2's reply: exactly ``count`` questions."""
    return {
        "type": "object",
        "properties": {
            "questions": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": count,
                "maxItems": count,
            }
        },
        "required": ["questions"],
        "additionalProperties": False,
    }


def insights_schema(count: int, statements: int) -> JsonSchema:
    """Step 4's reply: up to ``count`` insights, each citing some of the ``statements``
    numbered statements (bounded, so a small model cannot loop on a list of numbers)."""
    because = {
        "type": "array",
        "items": {"type": "integer", "minimum": 1, "maximum": statements},
        "maxItems": statements,
    }
    insight = {
        "type": "object",
        "properties": {"insight": {"type": "string"}, "because": because},
        "required": ["insight", "because"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "insights": {"type": "array", "items": insight, "minItems": 1, "maxItems": count}
        },
        "required": ["insights"],
        "additionalProperties": False,
    }


def parse_questions(reply: dict[str, Any], count: int) -> list[str] | None:
    """The questions of a step-2 reply (at most ``count``), or None if it does not fit."""
    questions = reply.get("questions")
    if not isinstance(questions, list) or not questions:
        return None
    if not all(isinstance(q, str) and q.strip() for q in questions):
        return None
    return [q.strip() for q in questions[:count]]


def parse_insights(reply: dict[str, Any], count: int) -> list[Insight] | None:
    """The insights of a step-4 reply (at most ``count``), or None if it does not fit."""
    insights = reply.get("insights")
    if not isinstance(insights, list) or not insights:
        return None
    parsed = [_parse_insight(item) for item in insights[:count]]
    return None if any(p is None for p in parsed) else [p for p in parsed if p is not None]


def _parse_insight(item: Any) -> Insight | None:
    if not isinstance(item, dict):
        return None
    text, because = item.get("insight"), item.get("because")
    if not isinstance(text, str) or not isinstance(because, list):
        return None
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in because):
        return None
    return Insight(_INLINE_CITATION.sub("", text).strip(), tuple(because))


def numbered(records: Sequence[MemoryRecord]) -> str:
    """Statements as the paper shows them: ``1. text`` per line, each on one line."""
    return "\n".join(
        f"{number}. {' '.join(record.text.split())[:STATEMENT_CHARS]}"
        for number, record in enumerate(records, start=1)
    )


def within_budget(
    records: Sequence[MemoryRecord], budget: int = PROMPT_CHARS
) -> list[MemoryRecord]:
    """The leading ``records`` (in priority order) whose statements fit ``budget`` characters."""
    kept: list[MemoryRecord] = []
    used = 0
    for record in records:
        used += min(len(record.text), STATEMENT_CHARS) + len("100. \n")
        if used > budget:
            break
        kept.append(record)
    return kept


def cited_ids(insight: Insight, statements: Sequence[MemoryRecord]) -> tuple[str, ...]:
    """Step 5: the ids of the statements an insight cites; numbers out of range are ignored."""
    ids = [statements[n - 1].id for n in insight.because if 1 <= n <= len(statements)]
    return tuple(dict.fromkeys(ids))


def _timestamp(microseconds: int) -> str:
    return f"arrow_cast({microseconds}, 'Timestamp(Microsecond, Some(\"UTC\"))')"


class Reflector:
    """Decides when to reflect and runs one reflection (section 4.2)."""

    def __init__(
        self,
        stream: MemoryStream,
        llm: StructuredLLM,
        threshold: int = 150,
        recent: int = 100,
        questions: int = 3,
        insights: int = 5,
        per_question: int = 15,
    ) -> None:
        self.stream = stream
        self.threshold = threshold
        self.recent = recent
        self.questions = questions
        self.insights = insights
        self.per_question = per_question
        self._llm = llm
        # When a run's insights all merged into reflections already there, no new reflection
        # marks the run: this does (in this process; after a restart the newest reflection
        # marks it again, so at most one extra run).
        self._last_run_us: int | None = None

    # When to reflect

    def importance_since_last_reflection(self) -> int:
        """The summed importance of the non-reflection records created after the newest
        reflection (of all records if there is none), read from the table each time. A deleted
        reflection still marks when the agent last reflected, so deleting one does not start
        another run at once."""
        where = "deleted = false AND kind != 'reflection'"
        marks = [m for m in (self._last_reflection_us(), self._last_run_us) if m is not None]
        last = max(marks, default=None)
        if last is not None:
            where += f" AND created_at > {_timestamp(last)}"
        importance = self.stream.records.query(where=where, columns=["importance"])
        total = pc.sum(importance.column("importance")).as_py()
        return int(total or 0)

    def _last_reflection_us(self) -> int | None:
        rows = self.stream.records.query(where="kind = 'reflection'", columns=["created_at"])
        newest = pc.max(rows.column("created_at").cast(pa.int64())).as_py()
        return None if newest is None else int(newest)

    def should_reflect(self) -> bool:
        """The paper's trigger: the importance since the last reflection reaches the threshold."""
        return self.importance_since_last_reflection() >= self.threshold

    # One reflection

    def reflect(self, cancel: threading.Event | None = None) -> list[MemoryRecord]:
        """Run steps 1-6 and return the stored reflections; [] when the LLM gave nothing usable
        or ``cancel`` was set (then nothing is stored)."""
        cancel = cancel or threading.Event()
        started_us = to_us(self.stream.now())
        try:
            insights = self._gather(cancel)
        except _Cancelled:
            insights = []
        if cancel.is_set():
            log.info("reflection cancelled; nothing stored")
            return []
        if not insights:
            return []
        stored = self.stream.add_many(insights, merge_duplicates=True)
        self._last_run_us = started_us
        return stored

    def _gather(self, cancel: threading.Event) -> list[NewMemory]:
        """Steps 1-5: the reflections to store, not yet written."""
        questions = self._ask_questions(self._recent_records(), cancel)
        if questions is None:
            log.warning("reflection skipped: no usable questions from the LLM")
            return []
        found: dict[str, tuple[str, ...]] = {}  # the same insight from two questions: once
        for question in questions:
            for text, evidence in self._insights_for(question, cancel):
                found[text] = tuple(dict.fromkeys((*found.get(text, ()), *evidence)))
        return [
            NewMemory(text, kind="reflection", source="assistant", evidence=evidence)
            for text, evidence in found.items()
        ]

    def _recent_records(self) -> list[MemoryRecord]:
        """Step 1: the most recent non-deleted records of any kind, oldest first."""
        page = self.stream.list_memories(Filters(), sort="created_at", page_size=self.recent)
        return within_budget(page.items)[::-1]

    def _ask_questions(
        self, records: Sequence[MemoryRecord], cancel: threading.Event
    ) -> list[str] | None:
        """Step 2: the most salient high-level questions about the recent records."""
        if not records:
            return None
        prompt = QUESTIONS_PROMPT.format(statements=numbered(records), count=self.questions)
        return self._ask(
            prompt,
            questions_schema(self.questions),
            lambda reply: parse_questions(reply, self.questions),
            QUESTION_TOKENS,
            cancel,
        )

    def _insights_for(
        self, question: str, cancel: threading.Event
    ) -> list[tuple[str, tuple[str, ...]]]:
        """Steps 3-5 for one question: its insights with the ids they cite; an insight that
        cites nothing valid is dropped."""
        statements = within_budget(
            [found.record for found in self.stream.retrieve(question, k=self.per_question)]
        )
        if not statements:
            return []
        prompt = INSIGHTS_PROMPT.format(statements=numbered(statements), count=self.insights)
        insights = self._ask(
            prompt,
            insights_schema(self.insights, len(statements)),
            lambda reply: parse_insights(reply, self.insights),
            INSIGHT_TOKENS,
            cancel,
        )
        if insights is None:
            log.warning("no usable insights for the reflection question %r", question[:80])
            return []
        cited = [(insight.text, cited_ids(insight, statements)) for insight in insights]
        return [(text, evidence) for text, evidence in cited if text and evidence]

    def _ask(
        self,
        prompt: str,
        schema: JsonSchema,
        parse: Callable[[dict[str, Any]], T | None],
        max_tokens: int,
        cancel: threading.Event,
    ) -> T | None:
        """Step 7: one LLM step, asked again once if the reply fails or does not fit; None
        after that. Raises ``_Cancelled`` if ``cancel`` is set before a call."""
        messages: list[Message] = [{"role": "user", "content": prompt}]
        for attempt in range(1, ATTEMPTS + 1):
            if cancel.is_set():
                raise _Cancelled
            try:
                reply = self._llm.complete_json(messages, schema, max_tokens=max_tokens)
            except Exception as error:  # any client failure means "no answer this time"
                log.warning("reflection LLM call failed (attempt %d): %s", attempt, error)
                continue
            parsed = parse(reply)
            if parsed is not None:
                return parsed
            log.warning("reflection reply did not fit its schema (attempt %d): %r", attempt, reply)
        return None


class ReflectionWorker(BackgroundWorker):
    """Reflects in the background whenever :meth:`poke` is called or ``interval_s`` passes and
    the threshold is reached; backs off while reflections store nothing (an LLM that is down
    would otherwise be asked again at every check, each time after reading the latest
    memories). ``clock``: monotonic seconds."""

    def __init__(
        self,
        reflector: Reflector,
        interval_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__("reflection", interval_s)
        self._reflector = reflector
        self._reflecting = False
        self._clock = clock
        self._failed_runs = 0
        self._next_try = 0.0
        self.start()

    @property
    def reflecting(self) -> bool:
        """A reflection (not just the check whether one is due) is running."""
        return self._reflecting

    def work(self, stop: threading.Event) -> None:
        if self._clock() < self._next_try or not self._reflector.should_reflect():
            return
        self._reflecting = True
        try:
            stored = self._reflector.reflect(cancel=stop)
        finally:
            self._reflecting = False
        log.info("reflection stored %d insights", len(stored))
        if stored:
            self._failed_runs = 0
            self._next_try = 0.0
        else:
            wait = min(RETRY_MOST_S, RETRY_FIRST_S * 2**self._failed_runs)
            self._failed_runs += 1
            self._next_try = self._clock() + wait
            log.info("reflection: the next try in %.0f s at the earliest", wait)
