"""An adder for the durability tests: adds memories, printing each id once ``add()`` has
returned.

``python -m tests.helpers.add_memories DATA_DIR MODEL TOKENIZER LABEL COUNT``

It prints ``imported`` once its imports are done (about 2 s here, most of it LanceDB), then
waits for a line on stdin before it opens the store, prints ``ready`` and adds. So a test can
start the next adder while the current one works, and kill each at a random moment after
``ready``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from memory.database import open_database
from memory.embedder import OnnxSentenceEmbedder
from memory.locking import WriteLock
from memory.stream import MemoryStream

data_dir, model, tokenizer, label, count = sys.argv[1:6]
print("imported", flush=True)
if not sys.stdin.readline():  # the test ended without starting it
    sys.exit(0)
data = Path(data_dir)
embedder = OnnxSentenceEmbedder(Path(model), Path(tokenizer))
stream = MemoryStream(open_database(data), WriteLock(data / "memory.lock"), embedder)
print("ready", flush=True)
for index in range(int(count)):
    record = stream.add(f"{label}: observation {index} about item {index * 7919 % 1000}")
    print(record.id, flush=True)
