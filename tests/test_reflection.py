"""Reflection (Park et al. 2023, section 4.2) on real LanceDB with the real embedder."""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from assistant.llm.client import LLMClient
from memory.embedder import OnnxSentenceEmbedder
from memory.records import MemoryRecord
from memory.reflection import (
    RETRY_FIRST_S,
    Insight,
    ReflectionWorker,
    Reflector,
    parse_insights,
    parse_questions,
)
from memory.stream import MemoryStream
from tests.memory_helpers import Clock, ScriptedLLM, open_stream

Messages = Sequence[dict[str, str]]
QUESTIONS = {
    "questions": [
        "What is Klaus working on?",
        "What does Milla enjoy?",
        "How are Klaus and Milla related?",
    ]
}
OBSERVATIONS = [
    "Klaus is writing a research paper on gentrification.",
    "Klaus reads books about urban sociology at the library.",
    "Klaus talks with Milla about his research over coffee.",
    "Milla paints watercolours in the park every morning.",
    "Milla sold two paintings at the weekend market.",
    "The library closes at eight in the evening.",
]


def observe(stream: MemoryStream, texts: Sequence[str], importance: int = 5) -> list[MemoryRecord]:
    return [stream.add(text, importance=importance) for text in texts]


def statements(messages: Messages) -> dict[int, str]:
    """The numbered statements of a prompt, as the LLM sees them."""
    found = re.findall(r"^(\d+)\. (.*)$", messages[-1]["content"], re.MULTILINE)
    return {int(number): text for number, text in found}


def cite(insight: str, *words: str) -> Callable[[Messages], dict[str, Any]]:
    """A reply citing every statement that contains one of ``words``."""

    def reply(messages: Messages) -> dict[str, Any]:
        numbers = [n for n, text in statements(messages).items() if any(w in text for w in words)]
        return {"insights": [{"insight": insight, "because": numbers}]}

    return reply


def in_turn(*replies: Callable[[Messages], Any]) -> Callable[[Messages], Any]:
    """One reply callable that answers with each of ``replies`` in turn (the last repeats)."""
    calls = iter(range(len(replies) * 100))

    def reply(messages: Messages) -> Any:
        return replies[min(next(calls), len(replies) - 1)](messages)

    return reply


def ids_with(records: Sequence[MemoryRecord], *words: str) -> set[str]:
    return {r.id for r in records if any(w in r.text for w in words)}


def reflections(stream: MemoryStream) -> list[MemoryRecord]:
    ids = stream.records.query(where="kind = 'reflection'", columns=["id"]).column("id")
    return stream.get_many(ids.to_pylist())


# When to reflect


def test_importance_sum_by_hand(stream: MemoryStream, clock: Clock) -> None:
    reflector = Reflector(stream, ScriptedLLM(QUESTIONS), threshold=11)
    assert reflector.importance_since_last_reflection() == 0
    a, b, _ = (
        stream.add(t, importance=i) for t, i in zip(OBSERVATIONS[:3], (2, 5, 9), strict=True)
    )
    assert reflector.importance_since_last_reflection() == 16
    stream.delete(b.id)
    assert reflector.importance_since_last_reflection() == 11
    assert reflector.should_reflect()
    clock.advance(minutes=1)
    stream.add("Klaus values his research.", kind="reflection", evidence=[a.id])
    assert reflector.importance_since_last_reflection() == 0
    clock.advance(minutes=1)
    stream.add(OBSERVATIONS[3], importance=4)
    stream.add("Milla loves painting.", kind="reflection", importance=10)  # newer reflection
    assert reflector.importance_since_last_reflection() == 0
    clock.advance(minutes=1)
    stream.add(OBSERVATIONS[4], importance=7)
    assert reflector.importance_since_last_reflection() == 7
    assert not reflector.should_reflect()


def test_a_deleted_reflection_still_marks_the_last_run(stream: MemoryStream, clock: Clock) -> None:
    reflector = Reflector(stream, ScriptedLLM(QUESTIONS))
    observe(stream, OBSERVATIONS[:2], importance=9)
    clock.advance(minutes=1)
    insight = stream.add("Klaus studies cities.", kind="reflection")
    clock.advance(minutes=1)
    observe(stream, OBSERVATIONS[2:3], importance=6)
    stream.delete(insight.id)
    assert reflector.importance_since_last_reflection() == 6


def test_a_run_whose_insights_all_merge_still_resets_the_sum(
    stream: MemoryStream, clock: Clock
) -> None:
    observe(stream, OBSERVATIONS[:3], importance=9)
    clock.advance(minutes=1)
    insight = cite("Klaus is dedicated to his research.", "research")
    one_run = [QUESTIONS, insight, insight, insight]  # each question finds the same insight
    reflector = Reflector(stream, ScriptedLLM(*one_run, *one_run), threshold=20)
    first = reflector.reflect()
    assert len(first) == 1 and not reflector.should_reflect()
    clock.advance(minutes=1)
    observe(stream, OBSERVATIONS[3:5], importance=9)
    assert reflector.importance_since_last_reflection() == 18
    clock.advance(minutes=1)
    observe(stream, OBSERVATIONS[5:], importance=9)
    clock.advance(minutes=1)
    again = reflector.reflect()  # the same insight: merged into the first reflection
    assert [r.id for r in again] == [first[0].id] and len(reflections(stream)) == 1
    assert reflector.importance_since_last_reflection() == 0


# One reflection, scripted


def test_reflection_stores_cited_insights(stream: MemoryStream, clock: Clock) -> None:
    records = observe(stream, OBSERVATIONS)
    clock.advance(minutes=5)
    llm = ScriptedLLM(
        QUESTIONS,
        in_turn(
            cite("Klaus is dedicated to his research.", "research"),
            cite("Milla is a working artist.", "paint"),
            cite("Klaus and Milla are close friends.", "Milla", "Klaus talks"),
        ),
    )
    stored = Reflector(stream, llm).reflect()

    questions_prompt = llm.calls[0][-1]["content"]
    assert "what are 3 most salient high-level questions we can answer" in questions_prompt
    assert list(statements(llm.calls[0]).values()) == OBSERVATIONS  # oldest first, 1..N
    assert len(llm.calls) == 4
    assert "What 5 high-level insights can you infer" in llm.calls[1][-1]["content"]
    assert [r.text for r in stored] == [
        "Klaus is dedicated to his research.",
        "Milla is a working artist.",
        "Klaus and Milla are close friends.",
    ]
    expected = [
        ids_with(records, "research"),
        ids_with(records, "paint"),
        ids_with(records, "Milla", "Klaus talks"),
    ]
    assert [set(r.evidence) for r in stored] == expected
    for record in stored:
        kept = stream.get(record.id)
        assert kept is not None and kept.kind == "reflection" and kept.sources == ("assistant",)
        assert kept.importance_state == "pending" and kept.created_at == clock.now
    assert {r.id for r in reflections(stream)} == {r.id for r in stored}
    assert Reflector(stream, llm).importance_since_last_reflection() == 0


def test_reflections_on_reflections_make_an_evidence_tree(
    stream: MemoryStream, clock: Clock
) -> None:
    records = observe(stream, OBSERVATIONS)
    clock.advance(minutes=5)
    first = Reflector(stream, ScriptedLLM(QUESTIONS, cite("Klaus loves research.", "research")))
    [lower] = first.reflect()
    clock.advance(hours=2)
    newer = observe(stream, ["Klaus applied for a research grant in Bremen."], importance=8)
    clock.advance(minutes=5)
    second = Reflector(
        stream, ScriptedLLM(QUESTIONS, cite("Research drives Klaus's plans.", "loves", "grant"))
    )
    [higher] = second.reflect()
    assert set(higher.evidence) == {lower.id, newer[0].id}
    tree = stream.evidence_tree(higher.id)
    children = {node.record.id: node for node in tree.children}
    assert set(children) == {lower.id, newer[0].id}
    assert {n.record.id for n in children[lower.id].children} == ids_with(records, "research")


def test_the_same_insight_from_two_questions_is_stored_once(stream: MemoryStream) -> None:
    records = observe(stream, OBSERVATIONS)
    llm = ScriptedLLM(
        QUESTIONS,
        in_turn(
            cite("Klaus is a researcher.", "research"),
            cite("Klaus is a researcher.", "library"),
            cite("Milla paints.", "paint"),
        ),
    )
    stored = Reflector(stream, llm).reflect()
    assert [r.text for r in stored] == ["Klaus is a researcher.", "Milla paints."]
    assert set(stored[0].evidence) == ids_with(records, "research", "library")


# Malformed replies


@pytest.mark.parametrize(
    "garbage",
    [{}, {"questions": []}, {"questions": "What?"}, {"questions": [1, 2, 3]}, {"answer": "x"}],
)
def test_unusable_questions_twice_store_nothing(
    stream: MemoryStream, garbage: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    observe(stream, OBSERVATIONS)
    llm = ScriptedLLM(garbage, garbage, QUESTIONS, cite("Never asked.", "Klaus"))
    with caplog.at_level(logging.WARNING, logger="memory.reflection"):
        assert Reflector(stream, llm).reflect() == []
    assert len(llm.calls) == 2 and reflections(stream) == []
    assert "no usable questions" in caplog.text


def test_a_failing_insight_step_skips_only_its_question(stream: MemoryStream) -> None:
    observe(stream, OBSERVATIONS)
    llm = ScriptedLLM(
        QUESTIONS,
        cite("Klaus is a researcher.", "research"),
        {"insights": []},
        {"insights": [{"insight": "No citations key."}]},
        cite("Milla paints.", "paint"),
    )
    stored = Reflector(stream, llm).reflect()
    assert len(llm.calls) == 5
    assert [r.text for r in stored] == ["Klaus is a researcher.", "Milla paints."]


def test_out_of_range_citations_are_ignored(stream: MemoryStream) -> None:
    records = observe(stream, OBSERVATIONS)
    llm = ScriptedLLM(
        {"questions": ["What is Klaus working on?"]},
        lambda messages: {
            "insights": [
                {"insight": "Cites nothing real.", "because": [0, -1, 99]},
                {"insight": "Cites nothing at all.", "because": []},
                {"insight": "Half real.", "because": [99, _number(messages, "gentrification")]},
            ]
        },
    )
    stored = Reflector(stream, llm).reflect()
    assert [(r.text, set(r.evidence)) for r in stored] == [
        ("Half real.", ids_with(records, "gentrification"))
    ]


def _number(messages: Messages, word: str) -> int:
    return next(n for n, text in statements(messages).items() if word in text)


def test_an_llm_exception_is_retried_once(stream: MemoryStream) -> None:
    observe(stream, OBSERVATIONS)
    llm = ScriptedLLM(
        ConnectionError("down"),
        QUESTIONS,
        TimeoutError("slow"),
        cite("Klaus is a researcher.", "research"),
    )
    stored = Reflector(stream, llm).reflect()
    assert len(llm.calls) == 6  # questions: 2, first question's insights: 2, the others: 1 each
    assert [r.text for r in stored] == ["Klaus is a researcher."]


def test_llm_down_for_good_returns_nothing(stream: MemoryStream) -> None:
    observe(stream, OBSERVATIONS)
    llm = ScriptedLLM(ConnectionError("down"))
    assert Reflector(stream, llm).reflect() == []
    assert len(llm.calls) == 2 and reflections(stream) == []


def test_an_empty_stream_asks_nothing(stream: MemoryStream) -> None:
    llm = ScriptedLLM(QUESTIONS)
    assert Reflector(stream, llm).reflect() == [] and llm.calls == []


def test_parsers_reject_wrong_shapes() -> None:
    assert parse_questions({"questions": [" Why? ", "How?"]}, 1) == ["Why?"]
    assert parse_questions({"questions": ["Why?", ""]}, 3) is None
    good = {"insight": "Klaus works hard (because of 1, 2).", "because": [1, 2]}
    assert parse_insights({"insights": [good]}, 5) == [Insight("Klaus works hard", (1, 2))]
    for wrong in (
        {"insights": "x"},
        {"insights": [good, "x"]},
        {"insights": [{"insight": 3, "because": [1]}]},
        {"insights": [{"insight": "x", "because": "1"}]},
        {"insights": [{"insight": "x", "because": [True]}]},
        {"insights": [{"insight": "x", "because": ["1"]}]},
    ):
        assert parse_insights(wrong, 5) is None, wrong


# Interruption


@pytest.mark.parametrize("cancelled_at", [1, 3])
def test_cancel_during_the_insight_step_stores_nothing(
    stream: MemoryStream, clock: Clock, cancelled_at: int
) -> None:
    observe(stream, OBSERVATIONS)
    stream.add("Klaus works late.", kind="reflection")
    clock.advance(minutes=5)
    observe(stream, ["Klaus skipped lunch to finish a chapter."], importance=9)
    before = len(reflections(stream))
    cancel = threading.Event()
    insight_calls = 0

    def reply(messages: Messages) -> dict[str, Any]:
        nonlocal insight_calls
        insight_calls += 1
        if insight_calls == cancelled_at:
            cancel.set()
        return cite(f"Insight {insight_calls}.", "Klaus")(messages)

    llm = ScriptedLLM(QUESTIONS, reply)
    assert Reflector(stream, llm).reflect(cancel=cancel) == []
    assert len(reflections(stream)) == before
    assert len(llm.calls) == 1 + cancelled_at  # no LLM call after the cancel


# In the background


def test_worker_reflects_once_the_threshold_is_passed(stream: MemoryStream, clock: Clock) -> None:
    llm = ScriptedLLM(QUESTIONS, cite("Klaus is a researcher.", "research"))
    worker = ReflectionWorker(Reflector(stream, llm, threshold=30), interval_s=3600)
    try:
        observe(stream, OBSERVATIONS[:3], importance=9)
        worker.poke()
        assert worker.wait_idle(30)
        assert llm.calls == [] and reflections(stream) == []
        clock.advance(minutes=1)
        observe(stream, OBSERVATIONS[3:4], importance=3)
        worker.poke()
        assert worker.wait_idle(60)
        assert [r.text for r in reflections(stream)] == ["Klaus is a researcher."]
        calls = len(llm.calls)
        worker.poke()
        assert worker.wait_idle(30)
        assert len(llm.calls) == calls  # the sum starts again from zero
    finally:
        worker.close()


def test_worker_checks_every_interval(stream: MemoryStream) -> None:
    llm = ScriptedLLM(QUESTIONS, cite("Klaus is a researcher.", "research"))
    observe(stream, OBSERVATIONS, importance=10)
    worker = ReflectionWorker(Reflector(stream, llm, threshold=30), interval_s=0.05)
    try:
        deadline = time.monotonic() + 60
        while not reflections(stream) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [r.text for r in reflections(stream)] == ["Klaus is a researcher."]
    finally:
        worker.close()


def test_worker_backs_off_while_reflections_store_nothing(stream: MemoryStream) -> None:
    """An LLM that is down is not asked again at every check: the worker waits 2 min after a
    reflection that stored nothing, twice as long after the next, and starts over once one
    stores something."""
    now = [0.0]
    replies: list[Any] = [ConnectionError("down")] * 4
    llm = ScriptedLLM(*replies, QUESTIONS, cite("Klaus is a researcher.", "research"))
    observe(stream, OBSERVATIONS, importance=10)
    worker = ReflectionWorker(
        Reflector(stream, llm, threshold=30), interval_s=3600, clock=lambda: now[0]
    )

    def check() -> int:
        worker.poke()
        assert worker.wait_idle(60)
        return len(llm.calls)

    try:
        assert check() == 2  # asked, and asked again once: nothing stored
        assert check() == 2  # too soon
        now[0] += RETRY_FIRST_S
        assert check() == 4  # nothing again: the wait doubles
        now[0] += RETRY_FIRST_S
        assert check() == 4
        now[0] += RETRY_FIRST_S
        assert check() > 4 and [r.text for r in reflections(stream)] == ["Klaus is a researcher."]
    finally:
        worker.close()


def test_close_cancels_a_reflection_in_progress(stream: MemoryStream) -> None:
    observe(stream, OBSERVATIONS, importance=10)
    entered, release = threading.Event(), threading.Event()

    def slow_questions(messages: Messages) -> dict[str, Any]:
        entered.set()
        release.wait(30)
        return QUESTIONS

    llm = ScriptedLLM(slow_questions, cite("Never stored.", "Klaus"))
    worker = ReflectionWorker(Reflector(stream, llm, threshold=30), interval_s=3600)
    worker.poke()
    assert entered.wait(30)
    worker.close(timeout=0.1)  # asks the run to stop while the LLM is still answering
    release.set()
    worker.close()
    assert worker.wait_idle(0)
    assert len(llm.calls) == 1 and reflections(stream) == []


# With the real local model


@pytest.mark.slow
def test_real_model_reflects_with_valid_evidence(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, fast_llm: LLMClient, clock: Clock
) -> None:
    memory = open_stream(tmp_path / "data", embedder, clock=clock)
    try:
        facts = [
            "Klaus is writing a research paper on gentrification in Bremen.",
            "Klaus spends every afternoon reading at the university library.",
            "Klaus interviewed three shop owners about rising rents.",
            "Klaus told Milla that his paper is due at the end of the month.",
            "Klaus drinks black coffee while he writes.",
            "Klaus stayed up until 2 am to finish a chapter of his paper.",
            "Klaus asked his professor for feedback on his first draft.",
            "Klaus joined a neighbourhood meeting about new apartment blocks.",
            "Klaus photographs old buildings before they are torn down.",
            "Klaus skipped a party to work on his research.",
            "Klaus presented his early findings at a student seminar.",
            "Klaus keeps notes about every interview in a red notebook.",
            "Klaus applied for a grant to continue his research next year.",
            "Klaus read a book about the history of Kreuzberg.",
            "Klaus feels nervous about the paper's deadline.",
            "Klaus celebrated finishing his draft with Milla at a cafe.",
            "Klaus cycles to the library every morning.",
            "Klaus rewrote the introduction of his paper twice.",
            "Klaus met a city planner to discuss housing policy.",
            "Klaus wants to become a professor of urban sociology.",
        ]
        for fact in facts:
            memory.add(fact, importance=8)
            clock.advance(minutes=10)
        # One question and two insights: the paper's steps at a cost a shared CPU can bear.
        reflector = Reflector(memory, fast_llm, questions=1, insights=2)
        assert reflector.importance_since_last_reflection() == 8 * len(facts) >= 150
        assert reflector.should_reflect()
        stored = reflector.reflect()
        assert stored and all(r.kind == "reflection" and r.evidence for r in stored)
        cited = {i for r in stored for i in r.evidence}
        assert {r.id for r in memory.get_many(sorted(cited))} == cited
        assert len(reflections(memory)) == len(stored)
        assert not reflector.should_reflect()
    finally:
        memory.close()
