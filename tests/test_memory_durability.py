"""Durability and concurrency: SIGKILL at random moments, several writers at once, bad tables."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from assistant.model_paths import ProfileModels
from assistant.settings import Settings
from memory.database import DatabaseError
from memory.embedder import OnnxSentenceEmbedder
from memory.locking import WriteLock
from tests.conftest import REPO
from tests.memory_helpers import open_stream

# Each adder is a new process (LanceDB's own fork support is experimental: a forked adder
# hung once in 50); the next one does its imports while the current one works.
ROUNDS = 8


def adder(data_dir: Path, settings: Settings, label: str, count: int) -> subprocess.Popen[str]:
    """tests/helpers/add_memories.py, once it has done its imports: a line on its stdin
    starts it."""
    paths = ProfileModels(settings).embedder()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.helpers.add_memories",
            str(data_dir),
            str(paths.model),
            str(paths.tokenizer),
            label,
            str(count),
        ],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    return process


def start(process: subprocess.Popen[str]) -> None:
    assert process.stdin is not None and process.stdout is not None
    assert process.stdout.readline().strip() == "imported"
    process.stdin.write("go\n")
    process.stdin.close()
    assert process.stdout.readline().strip() == "ready"


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_no_acknowledged_record(
    tmp_path: Path, fast_settings: Settings, embedder: OnnxSentenceEmbedder
) -> None:
    data_dir = tmp_path / "data"
    acknowledged: list[str] = []
    killed_after_some = 0
    chance = random.Random(20261121)
    upcoming = adder(data_dir, fast_settings, "round 0", 10_000)
    try:
        for round_number in range(ROUNDS):
            process = upcoming
            start(process)
            if round_number + 1 < ROUNDS:
                upcoming = adder(data_dir, fast_settings, f"round {round_number + 1}", 10_000)
            time.sleep(chance.uniform(0.05, 0.6))
            process.send_signal(signal.SIGKILL)
            process.wait()
            assert process.stdout is not None
            this_round = [line.strip() for line in process.stdout if line.strip()]
            acknowledged.extend(this_round)
            killed_after_some += bool(this_round)
    finally:
        upcoming.kill()
        upcoming.wait()
    # Most adders were killed in the middle of adding, not before their first record.
    assert killed_after_some > ROUNDS // 2, (killed_after_some, len(acknowledged))
    stream = open_stream(data_dir, embedder)
    found = {r.id for r in stream.get_many(acknowledged)}
    missing = [i for i in acknowledged if i not in found]
    assert missing == []
    assert stream.retrieve("observation about item", k=5, touch=False)


@pytest.mark.slow
def test_concurrent_writers_lose_no_update(
    tmp_path: Path, fast_settings: Settings, embedder: OnnxSentenceEmbedder
) -> None:
    data_dir = tmp_path / "data"
    stream = open_stream(data_dir, embedder)
    seeded = [stream.add(f"seed memory number {i} on subject {i}", importance=1) for i in range(8)]
    other_process = adder(data_dir, fast_settings, "other process", 15)
    start(other_process)
    assert other_process.stdout is not None
    errors: list[BaseException] = []
    added: list[str] = []

    def add_some(worker: int) -> None:
        try:
            for index in range(6):
                added.append(
                    stream.add(f"worker {worker} wrote note {index} on {worker * index}").id
                )
        except BaseException as error:
            errors.append(error)

    def edit_some(worker: int) -> None:
        try:
            for record in seeded[worker::2]:
                stream.edit(record.id, importance=7 + worker)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=add_some, args=(w,)) for w in range(3)]
    threads += [threading.Thread(target=edit_some, args=(w,)) for w in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    other_ids = other_process.stdout.read().split()
    assert other_process.wait(timeout=120) == 0
    assert errors == []
    assert len(other_ids) == 15 and len(added) == 18
    fresh = open_stream(data_dir, embedder)
    assert len(fresh.get_many(added + other_ids)) == 33
    assert [r.importance for r in fresh.get_many([s.id for s in seeded])] == [7, 8] * 4


def test_a_corrupt_table_is_reported_not_replaced(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    data_dir = tmp_path / "data"
    open_stream(data_dir, embedder).add("Something worth keeping.")
    table_dir = data_dir / "memory.lance" / "records.lance"
    for manifest in (table_dir / "_versions").iterdir():
        manifest.write_bytes(b"\x00garbage\x00" * 10)
    with pytest.raises(DatabaseError, match="exists but cannot be read") as raised:
        open_stream(data_dir, embedder)
    assert "left untouched" in str(raised.value)
    assert (table_dir / "_versions").exists() and any((table_dir / "data").iterdir())


def test_a_locked_database_gives_a_clear_message(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    data_dir = tmp_path / "data"
    stream = open_stream(data_dir, embedder)
    stream.records._lock = WriteLock(data_dir / "memory.lock", timeout_s=0.5)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time; f = os.open(sys.argv[1], os.O_RDWR);"
            "fcntl.flock(f, fcntl.LOCK_EX); os.ftruncate(f, 0); os.pwrite(f, b'4242', 0);"
            "print('held', flush=True);"
            "time.sleep(30)",
            str(data_dir / "memory.lock"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(
            DatabaseError, match=r"locked: .*memory.lock is held by another process \(pid 4242\)"
        ):
            stream.add("This must wait for the lock.")
    finally:
        holder.kill()
        holder.wait()
    assert stream.add("Now it goes through.").text == "Now it goes through."


def test_data_files_are_private(tmp_path: Path, embedder: OnnxSentenceEmbedder) -> None:
    data_dir = tmp_path / "data"
    open_stream(data_dir, embedder).add("Private thought.")
    assert os.stat(data_dir).st_mode & 0o077 == 0
    assert os.stat(data_dir / "memory.lance").st_mode & 0o077 == 0
