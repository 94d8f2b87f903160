"""Speech to text: a small interface and its faster-whisper implementation."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from voice.fitted_window import CAUTIOUS, FittedWindow, Tuning

SAMPLE_RATE = 16_000
# "fitted": an encoder window sized to the utterance (voice/fitted_window.py), "full": 30 s.
Window = Literal["fitted", "full"]


@dataclass(frozen=True)
class Transcript:
    text: str
    language: str
    duration_s: float
    avg_logprob: float
    no_speech_prob: float
    window_s: float = 30.0  # Whisper's encoder window: 30 s, or one fitted to the utterance

    @property
    def confidence(self) -> float:
        """exp(mean token log-probability): 1.0 is certain, near 0 is a guess."""
        return math.exp(self.avg_logprob) if self.avg_logprob > -50 else 0.0


# What Whisper writes for noise, breathing or silence: it learned them from the end of subtitled
# videos. Said for real, they come with confident tokens; see ``noise_phrase``.
NOISE_PHRASES = frozenset(
    {
        "thank you",
        "thanks",
        "thank you for watching",
        "thanks for watching",
        "please subscribe",
        "you",
        "bye",
        "oh",
        "so",
        "okay",
        "hmm",
        "subtitles by the amara org community",
    }
)
# A known noise phrase counts as heard only when Whisper was this sure of it.
NOISE_PHRASE_MAX_NO_SPEECH = 0.2
NOISE_PHRASE_MIN_LOGPROB = -0.8


class SpeechToText(Protocol):
    def transcribe(self, audio: NDArray[np.float32], prompt: str | None = None) -> Transcript:
        """Transcribe mono float32 audio at 16 kHz; ``prompt`` primes names and spellings."""

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
        window: Window = "fitted",
        tuning: Tuning = CAUTIOUS,
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
        self.language = language if self._model.model.is_multilingual else "en"
        # A fitted window decodes in a known language; detecting one takes the full window.
        wider = Tuning(tuning.min_window_s, max(tuning.beam_size, beam_size))
        self._fitted = (
            FittedWindow(self._model, self.language, wider)
            if window == "fitted" and self.language
            else None
        )

    def transcribe(self, audio: NDArray[np.float32], prompt: str | None = None) -> Transcript:
        return self._run(np.ascontiguousarray(audio, dtype=np.float32), prompt)

    def transcribe_file(self, path: Path) -> Transcript:
        from faster_whisper import decode_audio

        return self._run(decode_audio(str(path), sampling_rate=SAMPLE_RATE), None)

    def _run(self, audio: NDArray[np.float32], prompt: str | None) -> Transcript:
        if self._fitted is not None:
            fitted = self._fitted.transcribe(audio, prompt)
            if fitted is not None:
                return Transcript(
                    text=fitted.text,
                    language=self._fitted.language,
                    duration_s=len(audio) / SAMPLE_RATE,
                    avg_logprob=fitted.avg_logprob,
                    no_speech_prob=fitted.no_speech_prob,
                    window_s=fitted.window_s,
                )
        return self._full_window(audio, prompt)

    def _full_window(self, audio: NDArray[np.float32], prompt: str | None) -> Transcript:
        segments, info = self._model.transcribe(
            audio,
            beam_size=self.beam_size,
            language=self.language,
            condition_on_previous_text=False,
            initial_prompt=prompt or None,
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


def not_heard(transcript: Transcript) -> str | None:
    """Why a transcript should be dropped rather than answered, or None when it was speech.

    faster-whisper already empties segments it judges silent (no-speech probability over 0.6
    with low token confidence); what is left to catch is its stock phrases on noise that
    slipped past the VAD, which it writes with little confidence.
    """
    words = _plain(transcript.text)
    if not words:
        return "nothing recognisable was said"
    if words in NOISE_PHRASES and (
        transcript.no_speech_prob > NOISE_PHRASE_MAX_NO_SPEECH
        or transcript.avg_logprob < NOISE_PHRASE_MIN_LOGPROB
    ):
        return f"{transcript.text!r} is what Whisper says for noise, and it was unsure"
    return None


def _plain(text: str) -> str:
    """Lower-case words only: bracketed sound labels ([Music], (silence)) and symbols go."""
    text = re.sub(r"\[[^\]]*\]|\([^)]*\)|\*[^*]*\*", " ", text.lower())
    return " ".join(re.sub(r"[^a-z0-9' ]+", " ", text).split())
