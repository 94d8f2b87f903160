"""When each stage of a spoken turn happened, from the end of the user's speech to the first
sound of the reply (time.monotonic() seconds)."""

from __future__ import annotations

import time
from dataclasses import dataclass, fields

STAGES = (
    "turn_decided",
    "stt_done",
    "memories",
    "prompt_sent",
    "first_token",
    "first_word",
    "first_audio_synthesized",
    "first_audio_out",
    "first_content_audio_out",
)


@dataclass
class Timings:
    end_of_speech: float
    # When the endpointer ended the turn (a silence long enough, or a pause judged final).
    turn_decided: float | None = None
    stt_done: float | None = None
    # Set by whoever answers: the memories for the turn retrieved, its prompt sent.
    memories: float | None = None
    prompt_sent: float | None = None
    # The reply's first text, and its first word (set as the reply streams into speech).
    first_token: float | None = None
    first_word: float | None = None
    first_audio_synthesized: float | None = None
    first_audio_out: float | None = None
    # The first sound of the reply's own words, after any fixed acknowledgement it opened with.
    first_content_audio_out: float | None = None

    def mark(self, stage: str, at: float | None = None) -> None:
        """Set ``stage`` to ``at`` (now if None), unless it already happened."""
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}; stages: {STAGES}")
        if getattr(self, stage) is None:
            setattr(self, stage, time.monotonic() if at is None else at)

    def since_end_of_speech_ms(self) -> dict[str, float]:
        """Each stage that happened, in milliseconds after the end of the user's speech."""
        return {
            field.name: round((value - self.end_of_speech) * 1000.0, 1)
            for field in fields(self)
            if field.name in STAGES and (value := getattr(self, field.name)) is not None
        }
