"""The LoCoMo retrieval benchmark on a tiny LoCoMo-format file whose recall is known by hand."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.locomo import (
    CONFIGURATIONS,
    Configuration,
    LocomoError,
    Question,
    Tally,
    best_configuration,
    load_conversations,
    main,
    parse_session_time,
    recall_at,
    run,
)
from memory.embedder import OnnxSentenceEmbedder
from memory.scoring import RetrievalWeights, reciprocal_rank
from memory.stream import MemoryConfig, NewMemory
from memory.stream.episodes import CreationOrder, Episodes
from memory.stream.query_text import lexical_query, query_names, without_names
from tests.memory_helpers import ScriptedLLM, open_stream

SESSION_1 = [
    ("Caroline", "Hey Mel! How have you been lately?"),
    ("Melanie", "Busy with the kids, but good. What's new with you?"),
    ("Caroline", "I adopted a golden retriever puppy and named him Biscuit!"),
    ("Melanie", "Aww, that is adorable. Send me a picture sometime."),
    ("Caroline", "Sure thing, talk soon."),
]
SESSION_2 = [
    ("Melanie", "Hi Caroline, guess what happened this week."),
    ("Caroline", "Did you enjoy the camping trip at the lake last weekend?"),
    ("Melanie", "Yes, it was wonderful, thanks."),
    ("Melanie", "Also, my violin teacher moved away to Oslo in Norway."),
    ("Caroline", "Oh no, I hope you find a new teacher."),
]


def locomo_sample() -> dict[str, Any]:
    def turns(session: int, lines: list[tuple[str, str]]) -> list[dict[str, str]]:
        return [
            {"speaker": speaker, "dia_id": f"D{session}:{n}", "text": text}
            for n, (speaker, text) in enumerate(lines, start=1)
        ]

    first = turns(1, SESSION_1)
    first[3]["blip_caption"] = "a photo of a puppy on a sofa"
    return {
        "sample_id": "tiny",
        "conversation": {
            "speaker_a": "Caroline",
            "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": first,
            "session_2_date_time": "12:05 am on 25 May, 2023",
            "session_2": turns(2, SESSION_2),
        },
        "qa": [
            # The puppy turn is the nearest by far: recall@1 = 1.
            {
                "question": "What did Caroline name her golden retriever puppy?",
                "answer": "Biscuit",
                "evidence": ["D1:3"],
                "category": 4,
            },
            # Two evidence turns, both about what is asked: whichever comes first, recall@1 = 1/2.
            # Written as one string with a typo'd extra id, as LoCoMo sometimes does.
            {
                "question": "Did Caroline adopt a golden retriever puppy, and did Melanie's "
                "violin teacher move to Oslo in Norway?",
                "answer": "Yes; yes",
                "evidence": ["D1:3; D2:4", "D9:99"],
                "category": 1,
            },
            # The answer is a bare "yes"; the question turn before it is what matches: @1 = 0.
            {
                "question": "Did Melanie enjoy the camping trip at the lake?",
                "answer": "Yes",
                "evidence": ["D2:3"],
                "category": 2,
            },
            # Adversarial questions are left out.
            {
                "question": "What is the name of Melanie's cat?",
                "adversarial_answer": "Luna",
                "evidence": ["D1:2"],
                "category": 5,
            },
        ],
    }


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "tiny-locomo.json"
    path.write_text(json.dumps([locomo_sample()]), encoding="utf-8")
    return path


def test_session_dates_are_read_as_utc() -> None:
    assert parse_session_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_time("12:05 am on 25 May, 2023") == datetime(2023, 5, 25, 0, 5, tzinfo=UTC)
    assert parse_session_time("12:48 pm on 1 February, 2023") == datetime(
        2023, 2, 1, 12, 48, tzinfo=UTC
    )
    assert parse_session_time("9:32 AM on 8 Sept 2023") == datetime(2023, 9, 8, 9, 32, tzinfo=UTC)
    for bad in ("yesterday", "13:10 pm on 8 May, 2023", "1:56 pm on 31 February, 2023"):
        with pytest.raises(LocomoError):
            parse_session_time(bad)


def test_file_is_read_into_turns_and_questions(data_file: Path) -> None:
    (conversation,) = load_conversations(data_file)
    assert conversation.sample_id == "tiny"
    dia_ids = [t.dia_id for t in conversation.turns]
    assert dia_ids == [f"D1:{n}" for n in range(1, 6)] + [f"D2:{n}" for n in range(1, 6)]
    assert len(conversation.turns) == 10
    assert conversation.turns[0].when == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert conversation.turns[5].when == datetime(2023, 5, 25, 0, 5, tzinfo=UTC)
    assert conversation.turns[3].memory_text() == (
        "Melanie: Aww, that is adorable. Send me a picture sometime. "
        "[shares a photo: a photo of a puppy on a sofa]"
    )
    assert conversation.turns[2].memory_text().startswith("Caroline: I adopted")
    assert [(q.category, q.evidence) for q in conversation.questions] == [
        ("4", ("D1:3",)),
        ("1", ("D1:3", "D2:4")),
        ("2", ("D2:3",)),
    ]
    assert conversation.unknown_evidence == ("D9:99",)


def test_a_file_that_is_not_locomo_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps([{"conversation": {"session_1": [{"text": "hi"}]}}]))
    with pytest.raises(LocomoError):
        load_conversations(path)
    path.write_text("{not json")
    with pytest.raises(LocomoError):
        load_conversations(path)


def test_recall_by_hand() -> None:
    assert recall_at(["a", "b"], ["b", "x", "a"], 1) == 0.5
    assert recall_at(["a", "b"], ["b", "x", "a"], 3) == 1.0
    assert recall_at(["a"], ["x"], 5) == 0.0
    tally = Tally((1, 3))
    tally.add(Question("q1", ("a", "b"), "1"), ["a", "x", "b"])
    tally.add(Question("q2", ("c",), "1"), ["x", "y", "z"])
    tally.add(Question("q3", ("d",), "4"), ["d"])
    means = tally.means()
    assert means["1"] == {"1": 0.25, "2": None, "3": None, "4": 1.0, "all": 0.5}
    assert means["3"] == {"1": 0.5, "2": None, "3": None, "4": 1.0, "all": 2 / 3}
    results = {
        "a": {"1": {"all": 0.2}, "3": {"all": 0.9}},
        "b": {"1": {"all": 0.5}, "3": {"all": 0.5}},
    }
    assert best_configuration(results) == "a"  # type: ignore[arg-type]


@pytest.mark.slow
def test_recall_of_real_retrieval_matches_the_hand_count(
    data_file: Path, embedder: OnnxSentenceEmbedder
) -> None:
    cosine = next(c for c in CONFIGURATIONS if c.name == "cosine")
    contextual = next(c for c in CONFIGURATIONS if c.name == "contextual")
    configurations: list[Configuration] = [cosine, contextual]
    results, timings, cost = run(load_conversations(data_file), embedder, (1, 10), configurations)
    assert set(results) == {"cosine", "contextual"} and set(timings) == set(results)
    assert cost is None  # no configuration needed the graph
    assert results["cosine"]["1"] == pytest.approx(
        {"1": 0.5, "2": 0.0, "3": None, "4": 1.0, "all": 0.5}
    )
    # Ten turns in all: the top 10 holds every one of them.
    assert results["cosine"]["10"] == {"1": 1.0, "2": 1.0, "3": None, "4": 1.0, "all": 1.0}
    assert results["contextual"]["10"] == results["cosine"]["10"]
    assert results["contextual"]["1"]["4"] == 1.0


@pytest.mark.slow
def test_json_output_has_one_object_per_configuration(
    data_file: Path,
    tmp_path: Path,
    session_cache: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The embedder is built from the configuration, as the app does: an empty one here.
    for name in list(os.environ):
        if name.startswith("BRAIN_"):
            monkeypatch.delenv(name)
    (tmp_path / "config.toml").write_text("", encoding="utf-8")
    monkeypatch.setenv("BRAIN_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("BRAIN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("BRAIN_CACHE_DIR", str(session_cache))
    argv = ["--data", str(data_file), "--k", "10", "1", "--json"]
    assert main([*argv, "--configurations", "cosine", "text", "contextual"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert set(printed) == {"cosine", "text", "contextual", "best"}
    assert printed["best"] in {"cosine", "text", "contextual"}
    for name in ("cosine", "text", "contextual"):
        assert set(printed[name]) == {"1", "10"}
        for values in printed[name].values():
            assert set(values) == {"1", "2", "3", "4", "all"}
            assert values["3"] is None
            assert all(0.0 <= values[c] <= 1.0 for c in ("1", "2", "4", "all"))
    assert printed["cosine"]["10"]["all"] == 1.0


def test_a_conversation_cut_short_keeps_the_questions_it_can_answer(data_file: Path) -> None:
    (conversation,) = load_conversations(data_file)
    cut = conversation.first(5)
    assert [t.dia_id for t in cut.turns] == [f"D1:{n}" for n in range(1, 6)]
    assert [q.evidence for q in cut.questions] == [("D1:3",)]


@pytest.mark.slow
def test_the_graph_configurations_learn_the_graph_once_and_keep_it(
    data_file: Path, embedder: OnnxSentenceEmbedder, tmp_path: Path
) -> None:
    """A scripted model stands in for the LLM here (what it costs with the local one is in
    docs/BENCHMARKS.md): each turn is one extraction request, and the graph learnt from it
    lifts the turn it came from."""

    def extraction(messages: Sequence[dict[str, str]]) -> dict[str, Any]:
        said = messages[-1]["content"]
        if "adopted" in said:
            return {
                "triplets": [
                    {
                        "subject": "Caroline",
                        "relation": "adopted",
                        "object": "puppy",
                        "certain": True,
                    }
                ]
            }
        return {"triplets": []}

    llm = ScriptedLLM(extraction)
    chosen = [c for c in CONFIGURATIONS if c.name in ("contextual", "contextual+graph")]
    conversations = load_conversations(data_file)
    keep = tmp_path / "kept"
    results, _, cost = run(conversations, embedder, (1, 10), chosen, graph_llm=llm, keep=keep)
    assert cost is not None and (cost.turns, cost.llm_calls, cost.triplets) == (10, 10, 1)
    assert cost.per_100_turns()["llm_calls"] == 100
    assert set(results) == {"contextual", "contextual+graph"}
    # A second run finds the memory and the graph kept: no LLM call, the same figures.
    again, _, kept_cost = run(conversations, embedder, (1, 10), chosen, graph_llm=llm, keep=keep)
    assert len(llm.calls) == 10 and kept_cost == cost and again == results
    with pytest.raises(ValueError, match="needs an LLM"):
        run(conversations, embedder, (1,), chosen)


def test_a_missing_file_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--data", str(tmp_path / "none.json")]) == 2
    assert "cannot read" in capsys.readouterr().err


# The retrieval mechanisms the benchmark measures (memory.stream, contextual relevance)


def test_query_words_for_names_and_bm25() -> None:
    assert query_names("What did Caroline research?") == ("Caroline",)
    assert query_names("Which city have both Jean and John visited?") == ("Jean", "John")
    assert query_names("when did we talk? Did Anna call?") == ("Anna",)
    assert query_names("how are you") == ()
    assert without_names("What is Caroline's identity?", ["Caroline"]) == "What is identity?"
    assert without_names("Who is Caroline?", ["Caroline"]) == ""
    assert lexical_query('Where is the "support group" (AND Mel\'s)?') == (
        "where is the support group and mel s"
    )


def test_creation_order_grows_without_a_new_sort() -> None:
    order = CreationOrder()
    created = np.array([5, 3, 3, 9], dtype=np.int64)
    order.update(created)
    assert order.order.tolist() == [1, 2, 0, 3]
    grown = np.concatenate([created, np.array([9, 12, 10], dtype=np.int64)])
    order.update(grown)
    expected = np.argsort(grown, kind="stable")
    assert order.order.tolist() == expected.tolist()
    assert order.rank[expected].tolist() == list(range(grown.size))
    order.update(np.array([1, 0], dtype=np.int64))  # reloaded: sorted afresh
    assert order.order.tolist() == [1, 0] and order.rank.tolist() == [1, 0]


@pytest.mark.slow
def test_contextual_relevance_pulls_in_the_reply_and_the_named_speaker(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    start = datetime(2026, 3, 1, 18, 0, tzinfo=UTC)
    later = datetime(2026, 3, 9, 18, 0, tzinfo=UTC)
    stream = open_stream(tmp_path / "data", embedder, clock=lambda: later)
    lines = [
        ("Ben: How was the pottery class on Saturday, Anna?", start),
        ("Anna: Honestly the best afternoon in months.", start),
        ("Ben: I fixed the bike chain today.", start),
        ("Anna: Sounds good.", later),  # a week later: another episode
        ("Ben: My pottery class was cancelled again.", later),
    ]
    records = stream.add_many(
        [NewMemory(text, created_at=when) for text, when in lines], merge_duplicates=False
    )
    question = "How did Anna like the pottery class?"
    only = RetrievalWeights(recency=0.0, importance=0.0, relevance=1.0)
    stream.config = MemoryConfig(relevance="hybrid")
    plain = [m.record.id for m in stream.retrieve(question, k=2, weights=only, touch=False)]
    stream.config = MemoryConfig()
    found = stream.retrieve(question, k=2, weights=only, touch=False)
    assert records[1].id not in plain
    # The reply follows the question it answers, and Anna opens it.
    assert {m.record.id for m in found} == {records[0].id, records[1].id}
    # A quoted phrase is plain words to the full-text search (no phrase query to fail).
    quoted = stream.retrieve('"bike chain"', k=1, weights=only, touch=False)
    assert quoted[0].record.id == records[2].id
    # Neighbours are the turns around a record in its own episode: the bike-chain turn has two
    # before it, and none after it (the next record was made a week later).
    mirror = stream._stored.mirror
    positions = mirror.positions([records[2].id, records[4].id])
    near = Episodes(mirror).neighbours(positions, stream.config)  # (distance, side, record)
    everyone = mirror.positions([r.id for r in records])
    place = {int(p): r.id for p, r in zip(everyone, records, strict=True)}
    assert [place.get(int(p)) for p in near[:, 0, 0]] == [records[1].id, records[0].id]
    assert near[:, 1, 0].tolist() == [-1, -1]
    assert [place.get(int(p)) for p in near[:, 0, 1]] == [records[3].id, None]
    stream.close()


def test_reciprocal_rank() -> None:
    values = np.array([0.2, 0.9, 0.5, 0.5])
    assert reciprocal_rank(values, 60) == pytest.approx([1 / 64, 1 / 61, 1 / 62, 1 / 63])
