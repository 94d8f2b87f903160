"""Recall storage (every message) and archival storage (chunked documents) on real LanceDB with
the real embedder."""

from __future__ import annotations

import threading
from datetime import UTC, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from memory.archival import ArchivalStore, Span, join_chunks, split_into_chunks
from memory.database import open_database
from memory.embedder import OnnxSentenceEmbedder
from memory.locking import WriteLock
from memory.recall import RecallMessage, RecallStore
from tests.memory_helpers import START, Clock

MESSAGES = 124
CAT_AT = 37  # the only message that mentions Pumpernickel
FLYING_AT = 80  # the only message about fear of flying
FILLER = [
    "Remember to buy milk, eggs and bread at the corner shop",
    "The weather forecast says light rain until the evening",
    "The code review for the parser change is still waiting",
    "Leg day at the gym went well, squats felt easier",
    "I finished reading the second volume of the trilogy",
    "The tomato seedlings in the garden need more water",
    "The quarterly budget meeting moved to Thursday morning",
    "The lentil soup recipe needs more cumin next time",
    "The electricity bill is due at the end of the month",
    "The van needs four new tyres before the new year",
]
SPECIAL = {
    CAT_AT: "My sister's cat is called Pumpernickel and sleeps on the radiator.",
    FLYING_AT: "I get really anxious whenever I have to board an aeroplane.",
}
LIGHTHOUSE = "The lighthouse on Kestrel Point was painted bright red in 1921."


def message_text(index: int) -> str:
    return SPECIAL.get(index, f"{FILLER[index % len(FILLER)]} (note {index}).")


def role_of(index: int) -> str:
    return "user" if index % 2 == 0 else "assistant"


def open_recall(folder: Path, embedder: OnnxSentenceEmbedder, clock: Clock) -> RecallStore:
    return RecallStore(open_database(folder), WriteLock(folder / "memory.lock"), embedder, clock)


def open_archival(folder: Path, embedder: OnnxSentenceEmbedder) -> ArchivalStore:
    return ArchivalStore(open_database(folder), WriteLock(folder / "memory.lock"), embedder)


@pytest.fixture(scope="module")
def conversation(
    tmp_path_factory: pytest.TempPathFactory, embedder: OnnxSentenceEmbedder
) -> RecallStore:
    """124 messages, one a minute from START, alternating user and assistant."""
    clock = Clock()
    store = open_recall(tmp_path_factory.mktemp("recall"), embedder, clock)
    for index in range(MESSAGES):
        store.append(role_of(index), message_text(index))
        clock.advance(minutes=1)
    return store


@pytest.fixture
def recall(tmp_path: Path, embedder: OnnxSentenceEmbedder) -> RecallStore:
    return open_recall(tmp_path / "data", embedder, Clock())


@pytest.fixture
def archival(tmp_path: Path, embedder: OnnxSentenceEmbedder) -> ArchivalStore:
    return open_archival(tmp_path / "data", embedder)


def seqs(messages: Any) -> list[int]:
    return [message.seq for message in messages]


# Recall: appending and reading in order


def test_append_returns_the_committed_message(conversation: RecallStore) -> None:
    assert conversation.count() == MESSAGES
    first = conversation.by_date(page_size=1).items[0]
    assert first == RecallMessage(first.id, 1, "user", message_text(0), "main", START)
    assert first.at.tzinfo is not None and first.at.utcoffset() == timedelta(0)


def test_by_date_pages_through_every_message_in_order(conversation: RecallStore) -> None:
    second = conversation.by_date(page=2, page_size=10)
    assert second.describe() == "showing 10 of 124 (page 2/13)"
    assert seqs(second.items) == list(range(11, 21))
    assert [m.text for m in second.items] == [message_text(i) for i in range(10, 20)]
    last = conversation.by_date(page=13, page_size=10)
    assert last.describe() == "showing 4 of 124 (page 13/13)"
    assert seqs(last.items) == [121, 122, 123, 124]
    assert conversation.by_date(page=14, page_size=10).items == ()
    every = [m for p in range(1, 14) for m in conversation.by_date(page=p, page_size=10).items]
    assert seqs(every) == list(range(1, MESSAGES + 1))


def test_by_date_keeps_only_the_range_both_ends_included(conversation: RecallStore) -> None:
    since, until = START + timedelta(minutes=10), START + timedelta(minutes=19)
    found = conversation.by_date(since, until, page_size=50)
    assert found.total == 10
    assert seqs(found.items) == list(range(11, 21))
    assert all(since <= m.at <= until for m in found.items)
    assert conversation.by_date(since=START + timedelta(minutes=120)).total == 4
    assert conversation.by_date(until=START - timedelta(seconds=1)).total == 0


def test_recent_gives_the_last_messages_in_order(conversation: RecallStore) -> None:
    assert seqs(conversation.recent(5)) == [120, 121, 122, 123, 124]
    assert seqs(conversation.recent(1_000)) == list(range(1, MESSAGES + 1))
    assert conversation.recent(0) == []


def test_recent_keeps_the_last_message_after_a_sequence_number_was_written_twice(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    """Two processes writing one folder (before the service owned it) each numbered from
    their own count; the newest message must still come back."""
    first = open_recall(tmp_path, embedder, Clock())
    second = open_recall(tmp_path, embedder, Clock())
    first.append("user", "from the first process")
    second.append("user", "from the second process")
    later = open_recall(tmp_path, embedder, Clock())
    later.append("assistant", "the newest message")
    assert [m.text for m in later.recent(5)][-1] == "the newest message"


# Recall: search


def test_search_finds_a_message_by_a_word_only_it_contains(conversation: RecallStore) -> None:
    found = conversation.search("Pumpernickel")
    assert found.items[0].seq == CAT_AT + 1
    assert found.items[0].text == SPECIAL[CAT_AT]


def test_search_finds_a_paraphrase_by_meaning(conversation: RecallStore) -> None:
    found = conversation.search("scared of flying on planes")
    assert found.items[0].text == SPECIAL[FLYING_AT]


def test_search_pages_do_not_overlap(conversation: RecallStore) -> None:
    first = conversation.search("gym squats", page=1, page_size=10)
    second = conversation.search("gym squats", page=2, page_size=10)
    both = conversation.search("gym squats", page=1, page_size=20)
    assert first.total == second.total == both.total >= 20
    assert len(first.items) == len(second.items) == 10
    assert seqs(first.items) + seqs(second.items) == seqs(both.items)
    assert first.items[0].text.startswith("Leg day at the gym")
    assert first.describe() == f"showing 10 of {first.total} (page 1/{first.pages})"


def test_empty_search_lists_the_range_in_order(conversation: RecallStore) -> None:
    since, until = START + timedelta(minutes=30), START + timedelta(minutes=59)
    found = conversation.search("", page=2, page_size=10, since=since, until=until)
    assert found.describe() == "showing 10 of 30 (page 2/3)"
    assert seqs(found.items) == list(range(41, 51))


def test_search_filters_by_role_and_date(conversation: RecallStore) -> None:
    assistant = conversation.search("", roles=("assistant",), page_size=100)
    assert assistant.total == MESSAGES // 2
    assert {m.role for m in assistant.items} == {"assistant"}
    assert seqs(assistant.items) == list(range(2, MESSAGES + 1, 2))
    assert conversation.search("Pumpernickel", roles=("assistant",)).items[0].seq == CAT_AT + 1
    users = conversation.search("Pumpernickel", roles=("user",), page_size=100)
    assert CAT_AT + 1 not in seqs(users.items)
    assert {m.role for m in users.items} == {"user"}
    since = START + timedelta(minutes=CAT_AT + 1)
    later = conversation.search("Pumpernickel", since=since, page_size=100)
    assert later.total > 0
    assert all(m.at >= since for m in later.items)
    assert CAT_AT + 1 not in seqs(later.items)


# Recall: sequence numbers, reopening, threads, odd input


def test_seq_keeps_increasing_across_a_reopen(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    folder = tmp_path / "data"
    store = open_recall(folder, embedder, Clock())
    assert seqs(store.append("user", f"first session, line {i}") for i in range(3)) == [1, 2, 3]
    reopened = open_recall(folder, embedder, Clock())
    assert reopened.count() == 3
    assert reopened.append("assistant", "second session").seq == 4
    assert seqs(reopened.recent(10)) == [1, 2, 3, 4]


def test_concurrent_appends_lose_nothing_and_share_no_seq(recall: RecallStore) -> None:
    threads_count, per_thread = 4, 15
    results: list[RecallMessage] = []
    errors: list[BaseException] = []

    def worker(thread: int) -> None:
        try:
            for i in range(per_thread):
                results.append(recall.append("user", f"thread {thread} says line {i}"))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    total = threads_count * per_thread
    assert errors == []
    assert sorted(seqs(results)) == list(range(1, total + 1))
    assert recall.count() == total
    stored = recall.recent(total)
    assert seqs(stored) == list(range(1, total + 1))
    assert {m.text for m in stored} == {
        f"thread {t} says line {i}" for t in range(threads_count) for i in range(per_thread)
    }
    assert recall.append("user", "after the threads").seq == total + 1


def test_huge_message_is_stored_whole(recall: RecallStore) -> None:
    text = " ".join(f"word{i}" for i in range(20_000))
    assert len(text) > 100_000
    recall.append("tool", text)
    assert recall.recent(1)[0].text == text


def test_recall_cleans_surrogates_and_refuses_empty_text(recall: RecallStore) -> None:
    message = recall.append("user", "caf\udce9 au lait\x00 ")
    assert message.text == "caf\ufffd au lait"
    assert recall.recent(1)[0].text == "caf\ufffd au lait"
    with pytest.raises(ValueError, match="a message needs some text"):
        recall.append("user", "  \n ")
    with pytest.raises(ValueError, match="unknown role 'robot'"):
        recall.append("robot", "beep")
    assert recall.count() == 1


def test_explicit_times_are_stored_as_utc(recall: RecallStore) -> None:
    naive = START.replace(tzinfo=None) - timedelta(days=2)
    message = recall.append("user", "an imported line", at=naive)
    assert message.at == naive.replace(tzinfo=UTC)
    assert recall.recent(1)[0].at == naive.replace(tzinfo=UTC)


# Archival: chunking


def long_document() -> str:
    """About 5,000 characters of distinct sentences in paragraphs, the lighthouse in the middle."""
    names = ["Alice", "Bruno", "Chen", "Dara", "Egon", "Fatima", "Goran", "Hana", "Ivo", "Jun"]
    things = ["a blue bicycle", "three goats", "an old piano", "a sailing boat", "two beehives"]
    places = ["in Lugano", "near Odda", "outside Kochi", "in Nanjing", "by Lake Como", "in Quito"]
    days = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
    sentences = [
        f"{names[i % 10]} keeps {things[i % 5]} {places[i % 6]} and checks on it every "
        f"{days[i % 7]} at {i % 12 + 1} o'clock."
        for i in range(62)
    ]
    sentences.insert(31, LIGHTHOUSE)
    paragraphs = [" ".join(sentences[i : i + 7]) for i in range(0, len(sentences), 7)]
    return "\n\n".join(paragraphs)


def test_chunks_respect_size_overlap_and_sentence_ends() -> None:
    text = long_document()
    assert 4_800 <= len(text) <= 5_600
    chunks = split_into_chunks(text)
    assert len(chunks) >= 7
    for chunk in chunks:
        assert chunk.text == text[chunk.start : chunk.start + len(chunk.text)]
        assert len(chunk.text) <= 800
        assert chunk.start == 0 or (text[chunk.start - 1].isspace() and chunk.text[0].isalnum())
    for before, after in pairwise(chunks):
        assert len(before.text) >= 400
        assert before.text.endswith(".")
        overlap = before.start + len(before.text) - after.start
        assert 60 <= overlap <= 100
    assert chunks[-1].start + len(chunks[-1].text) == len(text)
    assert join_chunks(chunks) == text


def test_chunks_prefer_paragraph_ends() -> None:
    paragraph = "A short sentence about nothing in particular. " * 10
    text = (paragraph.strip() + "\n\n") * 3
    chunks = split_into_chunks(text.strip())
    assert chunks[0].text == paragraph.strip()
    assert join_chunks(chunks) == text.strip()


def test_words_are_never_split_and_a_single_long_word_is_cut_hard() -> None:
    words = " ".join(f"w{i:04d}x" for i in range(600))
    for chunk in split_into_chunks(words):
        end = chunk.start + len(chunk.text)
        assert end == len(words) or words[end] == " "
        assert chunk.text.split()[0].startswith("w")
    assert join_chunks(split_into_chunks(words)) == words
    long_word = "x" * 2_000
    cut = split_into_chunks(long_word)
    assert cut == [Span(0, "x" * 800), Span(800, "x" * 800), Span(1_600, "x" * 400)]
    assert split_into_chunks("tiny") == [Span(0, "tiny")]


# Archival: the store


def test_insert_stores_chunks_that_rebuild_the_document(archival: ArchivalStore) -> None:
    text = long_document()
    ids = archival.insert(text, source="import", title="Notes on friends")
    assert len(ids) == len(split_into_chunks(text)) == archival.count()
    rows = archival.table.query(
        columns=["id", "document_id", "chunk_index", "start", "title", "source", "created_at"]
    ).to_pylist()
    rows.sort(key=lambda row: row["chunk_index"])
    document_id = rows[0]["document_id"]
    assert [row["id"] for row in rows] == ids
    assert [row["chunk_index"] for row in rows] == list(range(len(ids)))
    assert [row["start"] for row in rows] == [c.start for c in split_into_chunks(text)]
    assert {(row["document_id"], row["title"], row["source"]) for row in rows} == {
        (document_id, "Notes on friends", "import")
    }
    assert all(row["created_at"].tzinfo is not None for row in rows)
    assert archival.get_document(document_id) == text


def test_a_question_finds_the_right_chunk_first(archival: ArchivalStore) -> None:
    archival.insert(long_document(), title="Notes on friends")
    archival.insert("The recipe for sourdough needs flour, water, salt and a lively starter.")
    hits = archival.search("What colour was the Kestrel Point lighthouse painted?")
    assert LIGHTHOUSE in hits.items[0].text
    assert hits.items[0].title == "Notes on friends"
    assert hits.items[0].score == pytest.approx(max(hit.score for hit in hits.items))
    bread = archival.search("how do I bake bread?").items[0]
    assert bread.text.startswith("The recipe for sourdough")
    assert bread.title is None


def test_search_results_are_paged(archival: ArchivalStore) -> None:
    archival.insert(long_document())
    archival.insert("Kestrel Point has a small harbour with twelve fishing boats.")
    first = archival.search("Kestrel Point harbour", page=1, page_size=3)
    second = archival.search("Kestrel Point harbour", page=2, page_size=3)
    both = archival.search("Kestrel Point harbour", page=1, page_size=6)
    assert first.total == second.total == both.total == archival.count()
    assert first.describe() == f"showing 3 of {first.total} (page 1/{first.pages})"
    ids = [hit.chunk_id for hit in first.items + second.items]
    assert ids == [hit.chunk_id for hit in both.items]
    assert len(set(ids)) == 6
    scores = [hit.score for hit in both.items]
    assert scores == sorted(scores, reverse=True)
    assert first.items[0].text.startswith("Kestrel Point has a small harbour")


def test_delete_document_removes_its_chunks(archival: ArchivalStore) -> None:
    kept = archival.insert("Bees make honey from the nectar of flowers.")[0]
    removed = archival.insert(long_document())
    document_id = removed[0].split(":")[0]
    assert archival.count() == 1 + len(removed)
    archival.delete_document(document_id)
    assert archival.count() == 1
    assert {hit.chunk_id for hit in archival.search("lighthouse").items} == {kept}
    with pytest.raises(LookupError, match=f"no archival document with id {document_id}"):
        archival.get_document(document_id)
    with pytest.raises(LookupError, match="no archival document"):
        archival.delete_document(document_id)


def test_archival_cleans_surrogates_and_refuses_empty_text(archival: ArchivalStore) -> None:
    ids = archival.insert("R\udce9sum\udce9 of the meeting\x00", title="Caf\udce9")
    document_id = ids[0].split(":")[0]
    assert archival.get_document(document_id) == "R\ufffdsum\ufffd of the meeting"
    assert archival.search("meeting summary").items[0].title == "Caf\ufffd"
    for empty in ("", "  \n\t ", "\x00"):
        with pytest.raises(ValueError, match="an archival document needs some text"):
            archival.insert(empty)
    with pytest.raises(ValueError, match="an archival search needs a query"):
        archival.search("  ")
    with pytest.raises(ValueError, match="unknown source 'robot'"):
        archival.insert("some text", source="robot")
    assert archival.count() == 1


def test_archival_survives_a_reopen(tmp_path: Path, embedder: OnnxSentenceEmbedder) -> None:
    text = long_document()
    document_id = open_archival(tmp_path / "data", embedder).insert(text)[0].split(":")[0]
    reopened = open_archival(tmp_path / "data", embedder)
    assert reopened.get_document(document_id) == text
    assert LIGHTHOUSE in reopened.search("red lighthouse built in 1921").items[0].text
