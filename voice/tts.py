"""Text to speech: a small interface and its Piper implementation."""

from __future__ import annotations

import json
import wave
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from voice.audio import resample


@dataclass(frozen=True)
class Speech:
    """Mono 16-bit audio."""

    samples: NDArray[np.int16]
    sample_rate: int

    @property
    def duration_s(self) -> float:
        return len(self.samples) / self.sample_rate

    def as_float(self, sample_rate: int) -> NDArray[np.float32]:
        """Float samples in [-1, 1] at ``sample_rate`` (linear interpolation)."""
        return resample(self.samples.astype(np.float32) / 32768.0, self.sample_rate, sample_rate)

    def write_wav(self, path: Path) -> None:
        with wave.open(str(path), "wb") as out:
            out.setnchannels(1)
            out.setsampwidth(2)
            out.setframerate(self.sample_rate)
            out.writeframes(self.samples.tobytes())


class TextToSpeech(Protocol):
    sample_rate: int

    def speak(self, text: str) -> Speech:
        """The whole text as one piece of audio."""

    def stream(self, text: str) -> Iterator[Speech]:
        """The text sentence by sentence, each chunk as soon as it is synthesised."""


class PiperTTS:
    def __init__(
        self,
        model_path: Path,
        config_path: Path,
        *,
        threads: int = 2,
        speed: float = 1.0,
        volume: float = 1.0,
        varied: bool = True,
    ) -> None:
        """``varied=False``: the same text gives the same samples every time (Piper draws
        noise inside the model, so each rendering of a sentence differs a little; a test that
        must repeat its figures turns that off)."""
        import onnxruntime
        from piper import PiperVoice
        from piper.config import PiperConfig, SynthesisConfig

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        config = PiperConfig.from_dict(json.loads(config_path.read_text(encoding="utf-8")))
        self._voice = PiperVoice(
            session=onnxruntime.InferenceSession(
                str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
            ),
            config=config,
        )
        self._synthesis = SynthesisConfig(
            length_scale=1.0 / speed,
            volume=volume,
            noise_scale=None if varied else 0.0,
            noise_w_scale=None if varied else 0.0,
        )
        self.sample_rate: int = config.sample_rate

    def stream(self, text: str) -> Iterator[Speech]:
        for chunk in self._voice.synthesize(text, syn_config=self._synthesis):
            yield Speech(chunk.audio_int16_array, chunk.sample_rate)

    def speak(self, text: str) -> Speech:
        pieces = [speech.samples for speech in self.stream(text)]
        samples = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int16)
        return Speech(samples, self.sample_rate)
