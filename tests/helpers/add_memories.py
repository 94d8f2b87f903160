"""Adds memories in a loop, printing each id once add() has returned (durability tests)."""

from __future__ import annotations

import sys
from pathlib import Path

from memory.embedder import OnnxSentenceEmbedder
from memory.stream import MemoryStream

data_dir, model, tokenizer, label, count = sys.argv[1:6]
stream = MemoryStream(Path(data_dir), OnnxSentenceEmbedder(Path(model), Path(tokenizer)))
print("ready", flush=True)
for index in range(int(count)):
    record = stream.add(f"{label}: observation {index} about item {index * 7919 % 1000}")
    print(record.id, flush=True)
