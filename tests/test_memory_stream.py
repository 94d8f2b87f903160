"""The memory stream on real LanceDB with the real embedder."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from memory.embedder import OnnxSentenceEmbedder
from memory.importance import ImportanceScale
from memory.records import DEFAULT_IMPORTANCE
from memory.scoring import RetrievalWeights, combined_score, cosine, min_max, recency
from memory.stream import Filters, MemoryConfig, MemoryRequestError, MemoryStream, NewMemory
from tests.memory_helpers import START, Clock, open_stream

HOUR_US = 3_600_000_000


@pytest.fixture(params=[True, False], ids=["exact", "candidates"])
def stream(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: OnnxSentenceEmbedder, clock: Clock
) -> Iterator[MemoryStream]:
    """Every test here runs on both ways of scoring: over all records, and over candidates."""
    config = MemoryConfig(exact_scoring=request.param)
    memory = open_stream(tmp_path / "data", embedder, clock=clock, config=config)
    yield memory
    memory.close()


# Scoring, by hand


def test_recency_decays_by_hours_since_last_access() -> None:
    now = 100 * HOUR_US
    last = np.array([100 * HOUR_US, 90 * HOUR_US, 0, 110 * HOUR_US], dtype=np.int64)
    assert recency(last, now) == pytest.approx([1.0, 0.995**10, 0.995**100, 1.0])


def test_min_max_and_ties() -> None:
    assert min_max(np.array([2.0, 4.0, 3.0])) == pytest.approx([0.0, 1.0, 0.5])
    assert min_max(np.array([7.0, 7.0])) == pytest.approx([0.0, 0.0])
    assert min_max(np.array([])).size == 0


def test_combined_score_weights_each_normalised_term() -> None:
    rec = np.array([1.0, 0.5, 0.0])
    imp = np.array([10.0, 1.0, 5.5])
    rel = np.array([0.2, 0.4, 0.3])
    weights = RetrievalWeights(recency=2.0, importance=1.0, relevance=0.5)
    expected = [2 * 1.0 + 1.0 + 0.5 * 0.0, 2 * 0.5 + 0.0 + 0.5 * 1.0, 0.0 + 0.5 + 0.5 * 0.5]
    assert combined_score(rec, imp, rel, weights) == pytest.approx(expected)


# Adding and retrieving


def test_add_is_committed_and_visible_to_a_new_instance(
    tmp_path: Path, stream: MemoryStream, embedder: OnnxSentenceEmbedder
) -> None:
    record = stream.add("My sister Anna lives in Lugano.", source="user", importance=6)
    again = open_stream(tmp_path / "data", embedder)
    stored = again.get(record.id)
    assert stored is not None and stored.text == record.text and stored.importance == 6
    assert stored.sources == ("user",) and stored.importance_state == "given"
    assert stored.created_at == START


def test_relevant_memory_ranks_first_and_is_touched(stream: MemoryStream, clock: Clock) -> None:
    stream.add("The dentist appointment is on Friday.", importance=5)
    target = stream.add("My sister Anna's birthday is on the fifth of May.", importance=5)
    stream.add("I bought new running shoes.", importance=5)
    clock.advance(hours=10)
    found = stream.retrieve("When is Anna's birthday?", k=2)
    assert found[0].record.id == target.id
    assert found[0].record.last_accessed_at == clock.now
    assert stream.get(target.id).last_accessed_at == clock.now  # type: ignore[union-attr]


def test_scores_match_the_formula_computed_by_hand(
    stream: MemoryStream, clock: Clock, embedder: OnnxSentenceEmbedder
) -> None:
    texts = ["Coffee with Boaz at the station.", "Boaz moved to Odda.", "Paint the fence."]
    records = []
    for hours, (text, importance) in enumerate(zip(texts, [2, 9, 4], strict=True)):
        records.append(stream.add(text, importance=importance))
        clock.advance(hours=hours + 1)
    weights = RetrievalWeights(recency=1.0, importance=1.0, relevance=1.0)
    stream.config = dataclasses.replace(stream.config, relevance="cosine")
    found = stream.retrieve("Where does Boaz live?", k=3, weights=weights, touch=False)

    query = embedder.embed(["Where does Boaz live?"])[0]
    stored = [stream.get(r.id) for r in records]
    hours = np.array([(clock.now - s.last_accessed_at) / timedelta(hours=1) for s in stored])  # type: ignore[union-attr]
    rec = 0.995**hours
    imp = np.array([2.0, 9.0, 4.0])
    rel = np.array([float(s.embedding @ query) for s in stored])  # type: ignore[union-attr, operator]
    norm = lambda v: (v - v.min()) / (v.max() - v.min())  # noqa: E731
    expected = norm(rec) + norm(imp) + norm(rel)
    by_id = {f.record.id: f.score for f in found}
    assert [by_id[r.id] for r in records] == pytest.approx(expected.tolist(), abs=1e-4)
    assert [f.record.id for f in found] == [records[i].id for i in np.argsort(-expected)]


def test_exact_scoring_agrees_with_the_formula_over_all_records(
    tmp_path: Path, embedder: OnnxSentenceEmbedder, clock: Clock
) -> None:
    rng = np.random.default_rng(3)
    topics = ["the dentist", "Anna's birthday", "the garden", "a train to Odda", "the budget"]
    items = [
        NewMemory(
            f"Note {i}: something about {topics[i % 5]} and item {i * 7 % 13}.",
            importance=int(rng.integers(1, 11)),
            created_at=START + timedelta(hours=float(rng.uniform(0, 2000))),
        )
        for i in range(400)
    ]
    config = MemoryConfig(relevance="cosine")
    memory = open_stream(tmp_path / "data", embedder, clock=clock, config=config)
    records = memory.add_many(items, merge_duplicates=False)
    clock.advance(hours=2100)
    last = np.array([int(r.last_accessed_at.timestamp() * 1e6) for r in records])
    vectors = np.array([r.embedding for r in records], dtype=np.float32)
    importance = np.array([float(r.importance) for r in records])
    for question in ["When is Anna's birthday?", "dentist", "How much is left in the budget?"]:
        query = embedder.embed([question])[0]
        scores = combined_score(
            recency(last, int(clock.now.timestamp() * 1e6)),
            importance,
            cosine(query, vectors),
            RetrievalWeights(),
        )
        expected = [records[i].id for i in np.argsort(-scores)[:10]]
        found = memory.retrieve(question, k=10, touch=False)
        assert [m.record.id for m in found] == expected
        assert [m.score for m in found] == pytest.approx(np.sort(scores)[::-1][:10], abs=1e-4)
    memory.close()


def test_recency_wins_between_equal_memories(stream: MemoryStream, clock: Clock) -> None:
    old = stream.add("Water the plants on the balcony.", importance=3)
    clock.advance(hours=200)
    new = stream.add("Water the plants in the kitchen.", importance=3)
    found = stream.retrieve("water the plants", k=2, weights=RetrievalWeights(1.0, 0.0, 0.0))
    assert [f.record.id for f in found] == [new.id, old.id]


def test_filters(stream: MemoryStream, clock: Clock) -> None:
    a = stream.add("Plan: finish the report by noon.", kind="plan", source="assistant")
    clock.advance(hours=1)
    b = stream.add(
        "Fact: the report is about solar panels.", kind="fact", source="tool", pinned=True
    )
    ids = lambda f: {m.record.id for m in stream.retrieve("report", k=10, filters=f, touch=False)}  # noqa: E731
    assert ids(Filters(kinds=("plan",))) == {a.id}
    assert ids(Filters(sources=("tool",))) == {b.id}
    assert ids(Filters(pinned=True)) == {b.id}
    assert ids(Filters(since=START + timedelta(minutes=30))) == {b.id}
    assert ids(Filters(until=START)) == {a.id}


def test_near_duplicate_is_merged_keeping_both_sources(stream: MemoryStream) -> None:
    first = stream.add("Remember that the wifi password is on the fridge.", source="user")
    second = stream.add("Remember that the wifi password is on the fridge!", source="assistant")
    assert second.id == first.id and second.sources == ("user", "assistant")
    assert len(stream) == 1
    other_kind = stream.add("Remember that the wifi password is on the fridge.", kind="fact")
    assert other_kind.id != first.id


def test_relative_time_becomes_absolute_event_time(stream: MemoryStream) -> None:
    record = stream.add("Call the plumber tomorrow at 3pm.")
    assert record.event_time is not None
    assert record.event_time.astimezone(START.tzinfo).isoformat() == "2026-11-22T15:00:00+00:00"


def test_bad_input_is_refused_or_cleaned(stream: MemoryStream) -> None:
    with pytest.raises(MemoryRequestError, match="needs some text"):
        stream.add("   ")
    with pytest.raises(MemoryRequestError, match="unknown source"):
        stream.add("hi there", source="martian")
    with pytest.raises(MemoryRequestError, match="importance must be 1-10"):
        stream.add("hi there", importance=11)
    broken = b"caf\xe9 and \xff bytes".decode("utf-8", "surrogateescape")
    record = stream.add(broken + "\x00")
    assert stream.get(record.id).text == "caf\ufffd and \ufffd bytes"  # type: ignore[union-attr]
    huge = "word " * 200_000  # a 1 MB paste
    kept = stream.add(huge)
    assert stream.get(kept.id).text == huge.strip()  # type: ignore[union-attr]


# Importance, rated as each record is stored

SCALE = {1: ("Hi there!", "Thanks a lot."), 5: ("I like jazz.",), 9: ("I'm allergic to peanuts.",)}
OTHER_SCALE = {2: ("Hi there!",), 6: ("I like jazz.",), 10: ("I'm allergic to peanuts.",)}


def test_each_record_is_rated_as_it_is_stored(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    memory = open_stream(tmp_path / "data", embedder, scale=ImportanceScale(embedder, SCALE))
    try:
        allergy = memory.add("I'm allergic to shellfish.")
        hello = memory.add("Good morning!")
        chosen = memory.add("I'm allergic to dust.", importance=4)
        assert (allergy.importance, allergy.importance_state) == (9, "rated")
        assert (hello.importance, hello.importance_state) == (1, "rated")
        assert (chosen.importance, chosen.importance_state) == (4, "given")
        assert memory.get(allergy.id) == allergy.with_changes(embedding=None)
    finally:
        memory.close()


def test_ratings_are_made_again_once_when_the_scale_changes(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    data = tmp_path / "data"
    unrated = open_stream(data, embedder)
    waiting = unrated.add("I'm allergic to shellfish.")
    chosen = unrated.add("I'm allergic to dust.", importance=4)
    unrated.close()
    assert (waiting.importance, waiting.importance_state) == (DEFAULT_IMPORTANCE, "pending")

    for anchors, expected in ((SCALE, 9), (OTHER_SCALE, 10)):
        memory = open_stream(data, embedder, scale=ImportanceScale(embedder, anchors))
        try:
            assert memory.wait_for_ratings(30) and memory.ratings_pending() == 0
            stored = memory.get(waiting.id)
            assert stored is not None
            assert (stored.importance, stored.importance_state) == (expected, "rated")
            # What the user gave is theirs.
            assert memory.get(chosen.id).importance == 4  # type: ignore[union-attr]
            assert memory.changes(chosen.id)[0].action == "add"
        finally:
            memory.close()

    again = open_stream(data, embedder, scale=ImportanceScale(embedder, OTHER_SCALE))
    try:
        assert again.wait_for_ratings(30)
        # Not rated a third time: the ratings were made on this scale.
        actions = [change.action for change in again.changes(waiting.id)]
        assert sorted(actions) == ["add", "rate", "rate"]
    finally:
        again.close()


# Editing with history


def test_edit_reembeds_and_retrieval_sees_it_at_once(stream: MemoryStream) -> None:
    record = stream.add("The meeting is in room 4.", importance=4)
    stream.add("Lunch was pasta.", importance=4)
    stream.edit(record.id, text="The piano lesson moved to Thursday.")
    found = stream.retrieve("piano lesson", k=1, touch=False)
    assert found[0].record.id == record.id
    assert found[0].record.text == "The piano lesson moved to Thursday."


def test_delete_restore_and_undo(stream: MemoryStream) -> None:
    record = stream.add("Secret: the spare key is under the mat.", importance=5)
    stream.delete(record.id)
    assert stream.retrieve("spare key", k=5, touch=False) == []
    assert stream.get(record.id).deleted  # type: ignore[union-attr]
    stream.restore(record.id)
    assert stream.retrieve("spare key", k=5, touch=False)[0].record.id == record.id
    stream.edit(record.id, importance=9, pinned=True)
    actions = [c.action for c in stream.changes(record.id)]
    assert actions[:4] == ["edit", "restore", "delete", "add"]
    stream.undo()
    restored = stream.get(record.id)
    assert restored is not None and (restored.importance, restored.pinned) == (5, False)
    restore_change = next(c for c in stream.changes(record.id) if c.action == "restore")
    stream.undo(restore_change.id)
    assert stream.get(record.id).deleted  # type: ignore[union-attr]
    with pytest.raises(MemoryRequestError, match="already undone"):
        stream.undo(restore_change.id)


def test_list_pages_and_sorts(stream: MemoryStream, clock: Clock) -> None:
    for index in range(25):
        stream.add(f"Note number {index} about topic {index}", importance=1 + index % 10)
        clock.advance(minutes=1)
    page = stream.list_memories(page=2, page_size=10)
    assert page.describe() == "showing 10 of 25 (page 2/3)"
    assert page.items[0].text == "Note number 14 about topic 14"
    by_importance = stream.list_memories(sort="importance", page_size=5)
    assert [r.importance for r in by_importance.items] == [10, 10, 9, 9, 8]
    later = stream.add("Dinner with Aya", event_time=clock() + timedelta(hours=5))
    sooner = stream.add("Call the bank", event_time=clock() + timedelta(hours=2))
    by_event = stream.list_memories(sort="event_time", descending=False, page_size=3)
    assert [r.id for r in by_event.items[:2]] == [sooner.id, later.id]


def test_evidence_tree(stream: MemoryStream) -> None:
    a = stream.add("Anna called about the trip.", importance=4)
    b = stream.add("Anna booked flights to Riga.", importance=5)
    insight = stream.add(
        "Anna is planning a trip to Riga.", kind="reflection", evidence=[a.id, b.id]
    )
    higher = stream.add("Travel matters a lot to Anna.", kind="reflection", evidence=[insight.id])
    tree = stream.evidence_tree(higher.id)
    assert tree.children[0].record.id == insight.id
    assert {c.record.id for c in tree.children[0].children} == {a.id, b.id}


# What retrieval and the list hand back comes from the mirror's copy: it must match the table.


def assert_records_match_the_table(stream: MemoryStream) -> None:
    everything = Filters(deleted=None)
    listed = stream.list_memories(filters=everything, page_size=100).items
    found = [s.record for s in stream.retrieve("notes", k=100, filters=everything, touch=False)]
    assert (
        len(listed)
        == len(found)
        == len(stream.list_memories(page_size=100).items) + sum(r.deleted for r in listed)
    )
    for record in (*listed, *found):
        assert record == stream.get(record.id)  # every field but the vector


def change_each_field(memory: MemoryStream, clock: Clock, ids: list[str]) -> None:
    first, second, third = ids
    clock.advance(minutes=5)
    merged = memory.add("Notes from the call with the bank.", source="assistant")
    assert merged.id == second
    memory.edit(first, text=f"Anna's notes: the flight leaves at {clock().hour}.", importance=8)
    memory.edit(third, kind="observation", pinned=False, event_time=clock() + timedelta(days=2))
    memory.delete(second)
    memory.adjust_utility([third, first], helped=True)
    memory.adjust_utility([first], helped=False)
    clock.advance(hours=3)
    memory.retrieve("flight", k=2)  # touched
    assert_records_match_the_table(memory)
    memory.undo()  # the delete
    memory.edit(third, kind="plan")
    assert_records_match_the_table(memory)


def test_retrieved_and_listed_records_match_the_table_after_every_change(
    tmp_path: Path, stream: MemoryStream, clock: Clock, embedder: OnnxSentenceEmbedder
) -> None:
    """Changed while the rows are new to this instance, then while they are as loaded."""
    first = stream.add("Anna's notes: the flight leaves tomorrow at 9.", importance=4)
    second = stream.add("Notes from the call with the bank.", evidence=[first.id])
    third = stream.add("A note to buy oat milk.", kind="plan", pinned=True)
    assert_records_match_the_table(stream)
    ids = [first.id, second.id, third.id]
    change_each_field(stream, clock, ids)
    reopened = open_stream(tmp_path / "data", embedder, clock=clock, config=stream.config)
    try:
        assert_records_match_the_table(reopened)
        change_each_field(reopened, clock, ids)
        reopened.add("More notes, added after the reopening.", importance=2)
        assert_records_match_the_table(reopened)
    finally:
        reopened.close()
