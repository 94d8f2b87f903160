"""`brain doctor` proves every part of each profile works, through the real command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

EXPECTED_CHECKS = ["stt", "tts", "llm", "embedder", "turn", "database", "audio"]


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["quality", "fast"])
def test_doctor_passes_for_each_profile(profile: str, tmp_path: Path, session_cache: Path) -> None:
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "HF_HUB_OFFLINE": "1",
        "BRAIN_CONFIG": str(tmp_path / "config.toml"),
        "BRAIN_DATA_DIR": str(tmp_path / "data"),
        "BRAIN_CACHE_DIR": str(session_cache),
    }
    (tmp_path / "config.toml").write_text(f'profile = "{profile}"\n', encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "assistant.cli", "doctor", "--json"],
        capture_output=True,
        text=True,
        env=environ,
        cwd=REPO,
        timeout=600,
    )
    report = json.loads(result.stdout)
    failures = [c for c in report["checks"] if not c["ok"]]
    assert result.returncode == 0 and report["ok"], failures
    assert report["profile"] == profile
    assert [c["name"] for c in report["checks"]] == EXPECTED_CHECKS
    details = {c["name"]: c["detail"] for c in report["checks"]}
    assert "go forward" in details["stt"].lower()
    assert "JSON {'sum': 5}" in details["llm"]
    assert all(c["seconds"] >= 0 for c in report["checks"])
