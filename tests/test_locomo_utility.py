"""The LoCoMo utility sweep: the questions split, feedback given as the agent would, held-out
recall per weight, and the weight chosen only where recall is kept."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.locomo import CONFIGURATIONS, Question, Tally, load_conversations, run
from benchmarks.locomo_utility import (
    BASES,
    Run,
    chosen_weight,
    format_table,
    split,
    sweep,
    to_json,
)
from memory.embedder import OnnxSentenceEmbedder
from tests.test_locomo_benchmark import locomo_sample


def tally(found: list[list[str]]) -> Tally:
    """Recall at 1 and 2 of two questions whose evidence is "a" and "b"."""
    counted = Tally((1, 2))
    for evidence, retrieved in zip(("a", "b"), found, strict=True):
        counted.add(Question("?", (evidence,), "4"), retrieved)
    return counted


def runs(by_weight: dict[float, list[list[str]]]) -> dict[str, dict[float, Run]]:
    return {base: {w: Run(tally(f)) for w, f in by_weight.items()} for base in BASES}


def test_questions_alternate_between_feedback_and_held_out() -> None:
    questions = [Question(str(i), ("D1:1",), "4") for i in range(5)]
    given, held_out = split(questions)
    assert [q.text for q in given] == ["0", "2", "4"] and [q.text for q in held_out] == ["1", "3"]


def test_the_weight_chosen_keeps_recall_at_every_k() -> None:
    plain = [["x", "a"], ["x", "b"]]  # @1: 0, @2: 1
    assert chosen_weight(runs({0.0: plain, 0.5: plain})) == 0.0, "a tie: the smaller weight"
    raises = [["a", "x"], ["x", "b"]]  # @1: 0.5, @2: 1
    best = [["a", "x"], ["b", "x"]]  # @1: 1, @2: 1
    assert chosen_weight(runs({0.0: plain, 0.2: raises, 1.0: best})) == 1.0
    loses = [["a", "x"], ["x", "y"]]  # @1: 0.5, @2: 0.5: lower at 2
    assert chosen_weight(runs({0.0: plain, 0.3: loses})) == 0.0
    with pytest.raises(ValueError, match="weight 0"):
        chosen_weight(runs({0.3: loses}))


@pytest.mark.slow
def test_the_sweep_measures_the_held_out_half_and_gives_feedback_on_the_rest(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps([locomo_sample()]), encoding="utf-8")
    [conversation] = load_conversations(path)
    swept = sweep([conversation], embedder, (1, 10), [0.0, 1.0])
    given, held_out = split(conversation.questions)
    contextual = next(c for c in CONFIGURATIONS if c.name == "contextual")
    only_held_out = replace(conversation, questions=tuple(held_out))
    plain, _, _ = run([only_held_out], embedder, (1, 10), [contextual])
    assert swept["contextual"][0.0].tally.means() == plain["contextual"]
    for base in BASES:
        for weight in (0.0, 1.0):
            feedback = swept[base][weight].feedback
            assert feedback.answered + feedback.corrected == len(given) == 2
            assert len(feedback.retrieve_s) == len(feedback.adjust_s) == 2
    report = to_json(swept)
    assert set(report) == {"utility", "chosen"} and report["chosen"] in (0.0, 1.0)
    assert set(report["utility"]) == set(BASES)
    first = report["utility"]["agent"]["1.0"]
    assert set(first["recall"]) == {"1", "10"}
    assert set(first["feedback"]["retrieve_ms"]) == {"median", "p95"}
    table = format_table(swept)
    assert "retrieve ms median / p95" in table and "held-out questions: 1;" in table
    assert len([line for line in table.splitlines() if line.startswith("| agent |")]) == 2
