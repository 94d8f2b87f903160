"""`benchmarks/turn.py` runs end to end on the real local model and prints what the issue asks
for (the figures themselves are in docs/BENCHMARKS.md, measured on an idle machine)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import benchmarks.retrieval_scale as scale
from benchmarks import turn
from memory.embedder import OnnxSentenceEmbedder


@pytest.mark.slow
def test_json_has_every_figure_per_profile(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    embedder: OnnxSentenceEmbedder,
    session_cache: Path,
    tmp_path: Path,
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("", encoding="utf-8")
    monkeypatch.setenv("BRAIN_CONFIG", str(config))
    monkeypatch.setenv("BRAIN_CACHE_DIR", str(session_cache))
    monkeypatch.setattr(scale, "real_embedder", lambda: embedder)
    code = turn.main(["--profiles", "fast", "--turns", "1", "--memories", "20", "--json"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    fast = report["fast"]
    for figure in ("first_token_ms", "first_sentence_ms"):
        assert 0 < fast[figure]["p50"] <= fast[figure]["p95"]
        assert 0 < fast["defeated"][figure]["p50"] <= fast["defeated"][figure]["p95"]
    assert fast["cache_speedup"] > 0
    assert fast["turns"] == 1 and 0 <= fast["replied"] <= 1
