"""Adders for the durability test: a process that forks one adder per line it reads.

``python -m tests.helpers.add_memories DATA_DIR MODEL TOKENIZER``, then one ``LABEL COUNT``
line per adder on stdin. Each adder (a forked child) opens the memory stream, prints
``ready PID``, adds COUNT memories printing each id once ``add()`` has returned, and is meant
to be killed; once it has ended this process prints ``ended PID``, so every id the adder
printed comes before that line. Forking after the imports makes a round cost the opening of
the store, not the 2-3 s of importing LanceDB and onnxruntime again, so the test can kill
many adders at random moments.
"""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path

from memory.embedder import OnnxSentenceEmbedder
from memory.stream import MemoryStream


def add(data_dir: Path, model: Path, tokenizer: Path, label: str, count: int) -> None:
    # Built after the fork: no thread of onnxruntime or LanceDB crosses it.
    stream = MemoryStream(data_dir, OnnxSentenceEmbedder(model, tokenizer))
    print(f"ready {os.getpid()}", flush=True)
    for index in range(count):
        record = stream.add(f"{label}: observation {index} about item {index * 7919 % 1000}")
        print(record.id, flush=True)


def main(argv: list[str]) -> None:
    data_dir, model, tokenizer = (Path(arg) for arg in argv[:3])
    for line in sys.stdin:
        label, count = line.rsplit(maxsplit=1)
        child = os.fork()
        if child == 0:
            code = 0
            try:
                add(data_dir, model, tokenizer, label, int(count))
            except BaseException:
                traceback.print_exc()
                code = 1
            os._exit(code)
        os.waitpid(child, 0)
        print(f"ended {child}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
