"""A message going round in a loop is stopped once it has started repeating.

The 0.5B model now and then writes one sentence over and over until the token cap ("I'm so
sorry for your brother's death." some 50 times, 2,200 characters, to an introduction:
docs/BENCHMARKS.md, "Judgement"), all of it shown and spoken. Each sentence is counted as it
ends; the third time the same one is said, the reply is stopped there (the server stops
writing it) and what was said is kept.
"""

from __future__ import annotations

import re
from collections import Counter

SAID_AT_MOST = 2
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class LoopStop:
    """Feed it the text shown, piece by piece; ``looping`` once a sentence came a third time."""

    def __init__(self) -> None:
        self.looping = False
        self._open = ""
        self._said: Counter[str] = Counter()

    def feed(self, piece: str) -> bool:
        *ended, self._open = _SENTENCE_END.split(self._open + piece)
        for sentence in ended:
            key = " ".join(sentence.lower().split())
            if key:
                self._said[key] += 1
                self.looping |= self._said[key] > SAID_AT_MOST
        return self.looping
