"""When each stage of a turn happened, in ms after the service accepted its message: sent
with the reply's end (``ReplyEnd.stages_ms``) and logged, so a slow turn shows where its
time went (waiting in the queue, retrieval, the prompt read, the first words)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

_WORD = re.compile(r"[^\W_]")


@dataclass
class TurnStages:
    accepted_at: float
    # Stage name -> time.monotonic() when it first happened.
    marks: dict[str, float] = field(default_factory=dict)

    def mark(self, stage: str) -> None:
        """``stage`` happened now, unless it already had."""
        self.marks.setdefault(stage, time.monotonic())

    def saw_text(self, text: str) -> None:
        """The reply streamed ``text``: its first piece, and the first holding a word."""
        self.mark("first_text")
        if _WORD.search(text):
            self.mark("first_word")

    def since_accepted_ms(self) -> dict[str, float]:
        return {
            stage: round((at - self.accepted_at) * 1000.0, 1) for stage, at in self.marks.items()
        }
