"""Durability and concurrency: SIGKILL at random moments, several writers at once, bad tables."""

from __future__ import annotations

import os
import queue
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
from memory.stream import MemoryStream
from tests.conftest import REPO

# Adders forked from one process that has done its imports: a round costs the opening of
# the store and a random wait, well under a second.
ROUNDS = 50


def adders(data_dir: Path, settings: Settings) -> subprocess.Popen[str]:
    """tests/helpers/add_memories.py: one adder process forked per line written to it."""
    paths = ProfileModels(settings).embedder()
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.helpers.add_memories",
            str(data_dir),
            str(paths.model),
            str(paths.tokenizer),
        ],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_no_acknowledged_record(
    tmp_path: Path, fast_settings: Settings, embedder: OnnxSentenceEmbedder
) -> None:
    data_dir = tmp_path / "data"
    forker = adders(data_dir, fast_settings)
    assert forker.stdin is not None and forker.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    output = forker.stdout

    def read() -> None:
        for line in output:
            lines.put(line.strip())

    threading.Thread(target=read, daemon=True).start()

    def next_line() -> str:
        return lines.get(timeout=60)

    acknowledged: list[str] = []
    killed_after_some = 0
    chance = random.Random(20261121)
    try:
        for round_number in range(ROUNDS):
            forker.stdin.write(f"round {round_number} 10000\n")
            forker.stdin.flush()
            ready = next_line()
            assert ready.startswith("ready "), ready
            adder = int(ready.split()[1])
            time.sleep(chance.uniform(0.05, 0.6))
            os.kill(adder, signal.SIGKILL)
            this_round = []
            while (line := next_line()) != f"ended {adder}":
                this_round.append(line)
            acknowledged.extend(this_round)
            killed_after_some += bool(this_round)
    finally:
        forker.stdin.close()
        forker.wait(timeout=30)
    # Most adders were killed in the middle of adding, not before their first record.
    assert killed_after_some > ROUNDS // 2, (killed_after_some, len(acknowledged))
    stream = MemoryStream(data_dir, embedder)
    found = {r.id for r in stream.get_many(acknowledged)}
    missing = [i for i in acknowledged if i not in found]
    assert missing == []
    assert stream.retrieve("observation about item", k=5, touch=False)


@pytest.mark.slow
def test_concurrent_writers_lose_no_update(
    tmp_path: Path, fast_settings: Settings, embedder: OnnxSentenceEmbedder
) -> None:
    data_dir = tmp_path / "data"
    stream = MemoryStream(data_dir, embedder)
    seeded = [stream.add(f"seed memory number {i} on subject {i}", importance=1) for i in range(8)]
    other_process = adders(data_dir, fast_settings)
    assert other_process.stdin is not None and other_process.stdout is not None
    other_process.stdin.write("other process 15\n")
    other_process.stdin.close()
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
    other_output = other_process.stdout.read().split("\n")
    assert other_process.wait(timeout=120) == 0
    assert errors == []
    assert other_output[0].startswith("ready ") and other_output[-2].startswith("ended ")
    other_ids = other_output[1:-2]
    assert len(other_ids) == 15 and len(added) == 18
    fresh = MemoryStream(data_dir, embedder)
    assert len(fresh.get_many(added + other_ids)) == 33
    assert [r.importance for r in fresh.get_many([s.id for s in seeded])] == [7, 8] * 4


def test_a_corrupt_table_is_reported_not_replaced(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    data_dir = tmp_path / "data"
    MemoryStream(data_dir, embedder).add("Something worth keeping.")
    table_dir = data_dir / "memory.lance" / "records.lance"
    for manifest in (table_dir / "_versions").iterdir():
        manifest.write_bytes(b"\x00garbage\x00" * 10)
    with pytest.raises(DatabaseError, match="exists but cannot be read") as raised:
        MemoryStream(data_dir, embedder)
    assert "left untouched" in str(raised.value)
    assert (table_dir / "_versions").exists() and any((table_dir / "data").iterdir())


def test_a_locked_database_gives_a_clear_message(
    tmp_path: Path, embedder: OnnxSentenceEmbedder
) -> None:
    data_dir = tmp_path / "data"
    stream = MemoryStream(data_dir, embedder)
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
    MemoryStream(data_dir, embedder).add("Private thought.")
    assert os.stat(data_dir).st_mode & 0o077 == 0
    assert os.stat(data_dir / "memory.lance").st_mode & 0o077 == 0
