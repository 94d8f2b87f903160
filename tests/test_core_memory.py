"""Core memory blocks: limits, edits, atomic persistence, a byte-stable rendering."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from assistant.agent.core_memory import CoreMemory, CoreMemoryError


def test_edits_persist_privately_and_render_the_same_bytes(tmp_path: Path) -> None:
    path = tmp_path / "data" / "core_memory.json"
    core = CoreMemory(path, limit=60)
    before = core.render()
    assert CoreMemory(path, limit=60).render() == before  # nothing saved yet: the defaults
    assert core.append("human", "Name: Sid.") == "human now holds 10/60 characters"
    core.append("human", "Sister: Brigida, Parma.")
    core.replace("human", "Sid", "Sidney")
    assert core.blocks["human"].value == "Name: Sidney.\nSister: Brigida, Parma."
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = CoreMemory(path, limit=60)
    assert again.render() == core.render() != before
    assert '<human chars="37/60">' in again.render()
    assert not list(path.parent.glob(".core_memory.json.*"))  # no temporary file left behind


def test_bad_edits_say_what_to_fix(tmp_path: Path) -> None:
    core = CoreMemory(tmp_path / "core.json", limit=20)
    with pytest.raises(CoreMemoryError, match="over its limit of 20"):
        core.append("human", "x" * 21)
    with pytest.raises(CoreMemoryError, match="no core memory block 'boss'"):
        core.append("boss", "x")
    with pytest.raises(CoreMemoryError, match="not found in human"):
        core.replace("human", "Bob", "Reg")
    with pytest.raises(CoreMemoryError, match="nothing to append"):
        core.append("human", "   ")
    assert core.blocks["human"].value == ""


def test_an_unreadable_file_is_reported_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "core.json"
    path.write_bytes(b"\xff\xfe not json")
    with pytest.raises(CoreMemoryError, match="cannot be read"):
        CoreMemory(path)
    assert path.read_bytes() == b"\xff\xfe not json"
