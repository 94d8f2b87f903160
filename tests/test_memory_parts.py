"""The embedder and the database opener, on the real model and a real LanceDB folder."""

from __future__ import annotations

import stat
from pathlib import Path

import numpy as np
import pytest

from assistant.model_paths import ProfileModels
from assistant.settings import Settings
from memory.database import DatabaseError, open_database
from memory.embedder import OnnxSentenceEmbedder


@pytest.fixture(scope="module")
def small_batches(fast_settings: Settings) -> OnnxSentenceEmbedder:
    paths = ProfileModels(fast_settings).embedder()
    return OnnxSentenceEmbedder(paths.model, paths.tokenizer, batch_size=4, remembered=0)


def test_embeddings_are_normalised_and_meaningful(small_batches: OnnxSentenceEmbedder) -> None:
    texts = [
        "My sister's birthday is on the fifth of May.",
        "When is my sister's birthday?",
        "The train to Bremen leaves at nine.",
        "x" * 5000,
        "",
        "Ünïcödé text — with emoji 🎉",
    ]
    vectors = small_batches.embed(texts)
    assert vectors.shape == (6, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.3


def test_batching_does_not_change_vectors(small_batches: OnnxSentenceEmbedder) -> None:
    texts = [f"note number {i} about topic {i % 3}" for i in range(9)]
    together = small_batches.embed(texts)
    alone = np.stack([small_batches.embed([t])[0] for t in texts])
    assert np.allclose(together, alone, atol=1e-4)


def test_a_text_embedded_again_is_not_computed_again(
    fast_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = ProfileModels(fast_settings).embedder()
    embedder = OnnxSentenceEmbedder(paths.model, paths.tokenizer, remembered=2)
    computed: list[str] = []
    compute = embedder._embed_batch

    def counted(texts: list[str]) -> np.ndarray:
        computed.extend(texts)
        return compute(texts)

    monkeypatch.setattr(embedder, "_embed_batch", counted)
    first = embedder.embed(["Where does Aya live?", "Where does Aya live?", "Parma"])
    assert computed == ["Where does Aya live?", "Parma"], "a repeat in one call is computed once"
    again = embedder.embed(["Parma", "Where does Aya live?"])
    assert computed == ["Where does Aya live?", "Parma"], "a turn's second embedding is free"
    assert np.array_equal(again, first[[2, 0]])
    embedder.embed(["Lugano", "Luton"])  # only the last two texts are kept
    embedder.embed(["Parma"])
    assert computed[-1] == "Parma"
    # For timing the model: every text computed, whatever the app's embedder remembers.
    before = len(computed)
    fresh = embedder.without_memory()
    fresh.embed(["Lugano"])
    fresh.embed(["Lugano"])
    assert computed[before:] == ["Lugano", "Lugano"]


def test_database_folder_is_private_and_usable(tmp_path: Path) -> None:
    database = open_database(tmp_path / "data")
    database.create_table("t", data=[{"id": 1, "vector": [1.0, 0.0]}])
    assert stat.S_IMODE((tmp_path / "data").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "data" / "memory.lance").stat().st_mode) == 0o700
    assert open_database(tmp_path / "data").open_table("t").count_rows() == 1


def test_unusable_data_folder_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(
        DatabaseError, match=r"cannot open the memory database at .*file/memory.lance"
    ):
        open_database(blocker)
