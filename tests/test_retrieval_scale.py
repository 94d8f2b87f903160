"""The retrieval-scale benchmark at a tiny size: its figures, its scorers, its derived vectors."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from benchmarks import retrieval_scale as bench
from memory import stored_rows
from memory.database import open_database
from memory.embedder import OnnxSentenceEmbedder
from memory.locking import WriteLock
from memory.mirror import VECTOR_COLUMNS, RecordMirror, to_us
from memory.records import records_schema
from memory.scoring import cosine
from memory.table import REINDEX_EVERY_ROWS, Table
from tests.memory_helpers import open_stream


def random_snapshot(count: int, seed: int = 7) -> bench.Snapshot:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(count, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ages = rng.uniform(0, bench.SPAN.total_seconds(), size=count)
    last = np.array([to_us(bench.NOW - timedelta(seconds=float(a))) for a in ages])
    return bench.Snapshot(
        ids=[f"r{i}" for i in range(count)],
        vectors=vectors,
        last_accessed_us=last.astype(np.int64),
        importance=rng.integers(1, 11, size=count).astype(np.float64),
    )


def test_derived_vectors_are_unit_mixes_of_real_ones() -> None:
    rng = np.random.default_rng(1)
    real = rng.normal(size=(50, 384)).astype(np.float32)
    real /= np.linalg.norm(real, axis=1, keepdims=True)
    vectors, pairs = bench.derive_vectors(real, 400)
    assert vectors.shape == (400, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert pairs.shape == (400, 2) and pairs.min() >= 0 and pairs.max() < 50
    # Each derived vector stays close to its two sources (a mix, not noise).
    nearest = np.einsum("ij,ij->i", vectors, real[pairs[:, 0]])
    assert float(np.median(nearest)) > 0.5
    again, _ = bench.derive_vectors(real, 400)
    assert np.array_equal(vectors, again)
    texts = bench.derived_texts(bench.memory_texts(50), pairs[:3])
    assert all("and also:" in text for text in texts)


def test_texts_are_varied_and_repeatable() -> None:
    texts = bench.memory_texts(2_000)
    assert len(set(texts)) > 0.9 * len(texts)
    assert bench.memory_texts(500) == texts[:500]
    asked = bench.questions(20)
    assert len(set(asked)) > 10 and all(q.endswith("?") for q in asked)


def test_naive_and_vectorised_scorers_agree_on_random_data() -> None:
    data = random_snapshot(500)
    rows = bench.naive_rows(data)
    rng = np.random.default_rng(3)
    for _ in range(5):
        query = rng.normal(size=384).astype(np.float32)
        exact = bench.exact_top_k(data, query)
        assert bench.naive_top_k(rows, query.tolist()) == exact
        assert len(exact) == bench.K


@pytest.mark.slow
def test_benchmark_at_a_tiny_size(tmp_path: Path, embedder: OnnxSentenceEmbedder) -> None:
    # 300 records, 200 of them embedded for real and 100 derived; 3 queries.
    report = bench.run([300], 3, tmp_path, embedder, real_limit=200)
    assert list(report) == ["300"]
    figures = report["300"]
    assert set(figures) == set(bench.FIGURES)
    values = {name: value for name, value in figures.items() if value is not None}
    assert set(values) == set(bench.FIGURES)  # all present at 300 records (naive included)
    assert all(
        isinstance(value, float) and value > 0
        for name, value in values.items()
        if name != "top10_agreement"
    )
    assert values["p95_ms"] >= values["p50_ms"]
    assert 0.0 <= values["top10_agreement"] <= 1.0
    json.dumps(report)

    # The built memory is reused, not rebuilt; its vectors are cached.
    cached = bench.VectorCache(tmp_path).load()[0]
    assert cached.shape == (200, 384)
    folders = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert len(folders) == 1
    built = bench.prepared(tmp_path, 300, bench.BenchEmbedder(embedder), rebuild=False)[1]
    assert built.real_records == 200 and built.derived_records == 100

    # Naive and vectorised scoring give the same top-10 on the stored records.
    stream = open_stream(folders[0] / "data", embedder, clock=lambda: bench.NOW)
    try:
        data = bench.snapshot(stream)
    finally:
        stream.close()
    assert len(data.ids) == 300
    rows = bench.naive_rows(data)
    for question in bench.questions(3):
        query = embedder.embed([question])[0]
        assert bench.naive_top_k(rows, query.tolist()) == bench.exact_top_k(data, query)


@pytest.mark.slow
def test_the_naive_speedup_hands_both_sides_the_same_query_vector(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    folder, _ = bench.prepared(tmp_path, 300, bench.BenchEmbedder(embedder), False, real_limit=300)
    counted = bench.BenchEmbedder(embedder)
    stream = open_stream(folder / "data", counted, clock=lambda: bench.NOW)
    try:
        data = bench.snapshot(stream)
        asked = bench.questions(6)
        speedups = bench.naive_speedups(stream, counted, data, asked)
        config = stream.config
    finally:
        stream.close()
    # The model ran once per question to make the vector both rankings were given, and once
    # more per question for the retrieval that embeds its query itself: never in the ranking.
    assert counted.texts == 2 * len(asked)
    assert config.relevance == "contextual"  # the default is back afterwards
    assert set(speedups) == {"speedup_vs_naive", "speedup_vs_naive_embedding_included"}
    like_for_like = speedups["speedup_vs_naive"]
    with_embedding = speedups["speedup_vs_naive_embedding_included"]
    assert like_for_like is not None and with_embedding is not None
    assert like_for_like > with_embedding > 0


@pytest.mark.slow
def test_command_prints_one_json_object(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    embedder: OnnxSentenceEmbedder,
) -> None:
    monkeypatch.setattr(bench, "real_embedder", lambda: embedder)
    code = bench.main(
        ["--sizes", "120", "--queries", "2", "--json", "--temp", "--real-limit", "100"]
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    assert list(printed) == ["120"] and set(printed["120"]) == set(bench.FIGURES)


def test_a_fold_drops_old_table_versions(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.string()), pa.field("text", pa.string())])
    lock = WriteLock(tmp_path / "lock")

    def versions_on_disk() -> int:
        return len(table._table.list_versions())

    table = Table(open_database(tmp_path), "notes", schema, lock, vector_column=None)
    table.add([{"id": f"n{i}", "text": f"note {i}"} for i in range(20)])
    for i in range(15):  # every update is a new version
        table.update(f"id = 'n{i}'", {"text": f"edited note {i}"})
    before = versions_on_disk()
    assert before > 15
    table.ensure_indices()  # versions younger than the default hour stay
    assert versions_on_disk() >= before
    eager = Table(
        open_database(tmp_path),
        "notes",
        schema,
        lock,
        None,
        None,
        keep_old_versions=timedelta(milliseconds=1),
    )
    eager.ensure_indices()
    assert versions_on_disk() <= 2
    assert eager.count() == 20 and eager.count("text LIKE 'edited%'") == 15


# What the benchmark leans on: bulk adds that fold indices once, and the mirror's exact scoring


def test_bulk_adds_fold_the_indices_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    schema = pa.schema([pa.field("id", pa.string()), pa.field("text", pa.string())])
    table = Table(
        open_database(tmp_path), "notes", schema, WriteLock(tmp_path / "lock"), vector_column=None
    )
    folds: list[int] = []
    original = table.ensure_indices

    def counted() -> None:
        folds.append(1)
        original()

    monkeypatch.setattr(table, "ensure_indices", counted)

    def rows(start: int, count: int) -> list[dict[str, object]]:
        return [{"id": f"n{i}", "text": f"note {i}"} for i in range(start, start + count)]

    table.add(rows(0, 10))  # the first rows make the text index
    assert len(folds) == 1
    with table.bulk():
        for start in range(10, 10 + 4 * REINDEX_EVERY_ROWS, REINDEX_EVERY_ROWS):
            table.add(rows(start, REINDEX_EVERY_ROWS))
        assert len(folds) == 1
        assert table.text_search("note", 5, None, ["id"]).num_rows == 5  # searchable meanwhile
    assert len(folds) == 2
    assert table.count() == 10 + 4 * REINDEX_EVERY_ROWS
    # Outside bulk, a fold waits for REINDEX_SHARE of the table (here 1,000 rows < 5,000).
    table.add(rows(100_000, REINDEX_EVERY_ROWS - 1))
    assert len(folds) == 2
    table.add(rows(200_000, 1))
    assert len(folds) == 3


def test_mirror_grows_in_batches_and_scores_every_record() -> None:
    rng = np.random.default_rng(5)
    mirror = RecordMirror()
    empty = pa.Table.from_pylist([], schema=records_schema(8)).select(VECTOR_COLUMNS)
    mirror.load(empty)
    assert mirror.has_vectors and mirror.directions.shape == (0, 8)
    rows: list[dict[str, object]] = []
    for batch in range(5):
        created = created_before = mirror.created_us
        new = [
            {
                "id": f"r{batch}-{i}",
                "kind": "observation",
                "importance": int(rng.integers(1, 11)),
                "last_accessed_at": bench.NOW - timedelta(hours=float(rng.uniform(0, 900))),
                "created_at": bench.NOW - timedelta(hours=float(rng.uniform(0, 900))),
                "pinned": False,
                "deleted": False,
                "vector": (rng.normal(size=8) * 3).astype(np.float32).tolist(),
                "text": f"{('Anna', '(Boaz)', 'the Anna')[i % 3]}: note {i}",
            }
            for i in range(700)
        ]
        assert mirror.created_us is created_before  # same object until records are added
        mirror.extend(new)
        rows.extend(new)
        assert mirror.created_us is not created
    assert len(mirror) == 3_500 and mirror.ids[-1] == "r4-699"
    assert mirror.importance.tolist() == [float(r["importance"]) for r in rows]  # type: ignore[arg-type]
    vectors = np.array([r["vector"] for r in rows], dtype=np.float32)
    query = rng.normal(size=8).astype(np.float32)
    assert np.allclose(mirror.similarity(query), cosine(query, vectors), atol=1e-5)
    for name, opening in (("Anna", "Anna:"), ("Boaz", "(Boaz)"), ("the", "the Anna")):
        expected = [i for i, r in enumerate(rows) if str(r["text"]).startswith(opening)]
        assert np.flatnonzero(mirror.opens_with(name)).tolist() == expected
    assert not mirror.opens_with("Cleo").any()
    mirror.set("r0-0", vector=[1.0] * 8, importance=9.0, text="Cleo: hello")
    assert mirror.importance[0] == 9.0
    assert np.flatnonzero(mirror.opens_with("Cleo")).tolist() == [0]
    assert mirror.similarity(np.ones(8, dtype=np.float32))[0] == pytest.approx(1.0)
    mirror.touch(["r1-3"], bench.NOW)
    assert mirror.last_accessed_us[703] == to_us(bench.NOW)


def test_stored_rows_fold_added_rows_and_keep_changes_on_both_sides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stored_rows, "FOLD_ROWS", 4)
    schema = pa.schema(
        [("id", pa.string()), ("text", pa.string()), ("sources", pa.list_(pa.string()))]
    )
    rows = stored_rows.StoredRows(pa.Table.from_pylist([], schema=schema))
    expected: list[dict[str, object]] = []
    for index in range(10):  # folded at 4 and 8 rows; two stay as added
        row = {"id": f"r{index}", "text": f"note {index}", "sources": ["user"], "vector": [0.5]}
        rows.extend([row])
        expected.append({"id": row["id"], "text": row["text"], "sources": ["user"]})
        if index % 3 == 0:  # changed before and after its fold
            rows.change(index, {"text": f"changed {index}", "importance": 9})
            expected[index]["text"] = f"changed {index}"
    assert len(rows) == 10
    rows.change(1, {"sources": ["user", "assistant"]})
    rows.change(9, {"sources": ["tool"]})
    expected[1]["sources"] = ["user", "assistant"]
    expected[9]["sources"] = ["tool"]
    places = [9, 0, 5, 8, 1, 3]
    assert rows.at(places) == [expected[p] for p in places]
    assert rows.at([]) == []
