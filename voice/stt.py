"""Speech to text: a small interface and its faster-whisper implementation."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

SAMPLE_RATE = 16_000


@dataclass(frozen=True)
class Transcript:
    text: str
    language: str
    duration_s: float
    avg_logprob: float
    no_speech_prob: float

    @property
    def confidence(self) -> float:
        """exp(mean token log-probability): 1.0 is certain, near 0 is a guess."""
        return math.exp(self.avg_logprob) if self.avg_logprob > -50 else 0.0


class SpeechToText(Protocol):
    def transcribe(self, audio: NDArray[np.float32]) -> Transcript:
        """Transcribe mono float32 audio at 16 kHz."""

    def transcribe_file(self, path: Path) -> Transcript:
        """Transcribe any audio file (decoded and resampled to 16 kHz mono)."""


class WhisperSTT:
    """faster-whisper on CTranslate2, int8 on the CPU, from a local model folder only."""

    def __init__(
        self,
        model_dir: Path,
        *,
        threads: int = 2,
        beam_size: int = 1,
        language: str | None = "en",
    ) -> None:
        from faster_whisper import WhisperModel

        if not (model_dir / "model.bin").exists():
            raise FileNotFoundError(f"no Whisper model.bin in {model_dir}")
        # A path, never a hub name, so nothing is ever downloaded.
        self._model = WhisperModel(
            str(model_dir),
            device="cpu",
            compute_type="int8",
            cpu_threads=threads,
            local_files_only=True,
        )
        self.beam_size = beam_size
        self.language = language
        self._english_only = not self._model.model.is_multilingual

    def transcribe(self, audio: NDArray[np.float32]) -> Transcript:
        return self._run(np.ascontiguousarray(audio, dtype=np.float32))

    def transcribe_file(self, path: Path) -> Transcript:
        from faster_whisper import decode_audio

        return self._run(decode_audio(str(path), sampling_rate=SAMPLE_RATE))

    def _run(self, audio: NDArray[np.float32]) -> Transcript:
        language = "en" if self._english_only else self.language
        segments, info = self._model.transcribe(
            audio,
            beam_size=self.beam_size,
            language=language,
            condition_on_previous_text=False,
            vad_filter=False,
        )
        collected = list(segments)
        text = " ".join(segment.text.strip() for segment in collected).strip()
        if collected:
            weights = np.array([max(s.end - s.start, 1e-3) for s in collected])
            avg_logprob = float(np.average([s.avg_logprob for s in collected], weights=weights))
            no_speech = float(np.average([s.no_speech_prob for s in collected], weights=weights))
        else:
            avg_logprob, no_speech = -math.inf, 1.0
        return Transcript(
            text=text,
            language=info.language,
            duration_s=float(info.duration),
            avg_logprob=avg_logprob,
            no_speech_prob=no_speech,
        )
