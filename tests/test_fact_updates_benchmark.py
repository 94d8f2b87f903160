"""The fact-update benchmark's scoring, with a scripted model standing in for the LLM (what the
local model scores is in docs/BENCHMARKS.md): real LanceDB, real embedder, real graph."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.fact_updates import (
    ADDITIONS,
    DATA,
    Addition,
    Case,
    learn_cases,
    load_additions,
    load_cases,
    report,
    score,
    score_addition,
    table,
)
from memory.embedder import OnnxSentenceEmbedder
from tests.memory_helpers import ScriptedLLM

CASES = [
    Case(
        "User: My sister Ana lives in Porto.",
        "User: Ana moved to Lisbon last month.",
        "Where does Ana live?",
        "Where did Ana live before?",
        "Lisbon",
        "Porto",
    ),
    Case(
        "User: My dog is called Rex.",
        "User: Rex died; we adopted a dog called Luna.",
        "What is my dog called?",
        "What was my dog called before?",
        "Luna",
        "Rex",
    ),
]
ADDED = [
    Addition(
        "User: Ana likes jazz.",
        "User: Ana has started to like rock music too.",
        "What music does Ana like?",
        "jazz",
    )
]
FACTS = {
    "jazz": ("Ana", "likes", "jazz"),
    "rock": ("Ana", "likes", "rock"),
    "Porto": ("Ana", "lives in", "Porto"),
    "Lisbon": ("Ana", "lives in", "Lisbon"),
    "Rex.": ("user", "has dog", "Rex"),
    "Luna": ("user", "has dog", "Luna"),
}


def model(replace_dogs: bool) -> ScriptedLLM:
    """Extracts the one fact of each memory; says the move replaced Porto, and the new dog
    replaced Rex and rock replaced jazz only when ``replace_dogs`` (an eager model)."""

    def reply(messages: Sequence[dict[str, str]]) -> dict[str, Any]:
        asked = messages[-1]["content"]
        if asked.startswith("Task: extract."):
            said = [f for key, f in FACTS.items() if key in asked]
            return {
                "triplets": [
                    {"subject": s, "relation": r, "object": o, "certain": True} for s, r, o in said
                ]
            }
        if asked.startswith("Task: outdated."):
            known = asked.split("New facts:")[0].splitlines()
            wanted = [
                "Ana lives in Porto",
                *(["has dog Rex", "likes jazz"] if replace_dogs else []),
            ]
            return {
                "outdated": [
                    {"known": int(line.split(".")[0]), "new": "a"}
                    for line in known
                    if line[:1].isdigit() and any(w in line for w in wanted)
                ]
            }
        return {"same": False}

    return ScriptedLLM(reply)


def test_the_data_set_has_at_least_30_cases_each_naming_both_answers() -> None:
    cases = load_cases(DATA)
    assert len(cases) >= 30
    for case in cases:
        assert case.current.casefold() in case.after.casefold()
        assert case.past.casefold() in case.before.casefold()
    additions = load_additions(ADDITIONS)
    assert len(additions) >= 16
    for addition in additions:
        assert addition.kept.casefold() in addition.before.casefold()
        assert addition.kept.casefold() not in addition.after.casefold()


def test_a_case_scores_only_when_the_past_fact_was_retired(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    careful = model(replace_dogs=False)
    store, calls, _ = learn_cases(CASES, tmp_path / "a", embedder, careful, ADDED)
    outcomes = [score(store, case) for case in CASES]
    assert calls >= 6
    # Rex is still known (the search finds him) but not marked as past.
    assert [(o.current, o.past_found, o.past) for o in outcomes] == [
        (True, True, True),
        (True, True, False),
    ]
    [added] = [score_addition(store, addition) for addition in ADDED]
    assert added.kept
    figures = report(outcomes, calls, 1.0, [added])
    assert (figures["current"], figures["past_found"], figures["past"], figures["both"]) == (
        1.0,
        1.0,
        0.5,
        0.5,
    )
    assert (figures["additions"], figures["kept"]) == (1, 1.0)
    [failure] = figures["failures"]
    assert failure["after"] == CASES[1].after and "has dog Rex" in " ".join(failure["found_then"])
    assert "current fact found 100%" in table(figures)
    # A model that retires whatever it is shown: the dog is replaced, and so is the jazz.
    eager = model(replace_dogs=True)
    store, _, _ = learn_cases(CASES, tmp_path / "b", embedder, eager, ADDED)
    assert all(score(store, case).past for case in CASES)
    [added] = [score_addition(store, addition) for addition in ADDED]
    assert not added.kept
    assert "not kept" in table(report([], 0, 1.0, [added]))
