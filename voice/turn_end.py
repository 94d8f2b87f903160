"""Whether the user has finished speaking, judged by how the speech sounds, not only by how
long the silence after it is.

A silence long enough to be sure (600 ms: readers pause up to half a second inside a
sentence) is most of a spoken turn's wait. People hear that a sentence is over from its words
and its melody, and so does smart-turn v3 (Pipecat's open turn-completion model, a Whisper-tiny
encoder with a small classifier, run here through onnxruntime): after a short pause it says how
likely it is that the speaker has finished, and the turn ends at once when it is likely; an
unfinished sentence ("Could you send a message to...") still waits for the long silence.

The model reads the last 8 s of the utterance as Whisper's 80-band log-mel features
(faster-whisper's extractor), the waveform first scaled to zero mean and unit variance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import numpy as np

from voice.audio import SAMPLE_RATE, Frame

WINDOW_S = 8
# The model's own decision line: above it, the turn is complete.
COMPLETE_AT = 0.5


class TurnJudge(Protocol):
    def finished(self, audio: Frame) -> float:
        """How likely (0-1) it is that the speaker has finished, from ``audio`` (16 kHz, the
        utterance up to now, the pause after its last word included)."""


class SmartTurn:
    """smart-turn v3 (ONNX, CPU) on one thread: it runs beside the recogniser and the LLM."""

    def __init__(self, model: Path, threads: int = 1) -> None:
        import onnxruntime as ort
        from faster_whisper.feature_extractor import FeatureExtractor

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(
            str(model), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._input = self._session.get_inputs()[0].name
        self._features = FeatureExtractor(feature_size=80, chunk_length=WINDOW_S)

    def finished(self, audio: Frame) -> float:
        features = self._features(window(audio), padding=0)
        batch = np.ascontiguousarray(features[np.newaxis], dtype=np.float32)
        (probability,) = self._session.run(None, {self._input: batch})
        return float(np.asarray(probability).reshape(-1)[0])


def window(audio: Frame) -> Frame:
    """The model's input: the last ``WINDOW_S`` seconds, silence before a shorter utterance,
    scaled to zero mean and unit variance (as the model was trained)."""
    size = WINDOW_S * SAMPLE_RATE
    samples = np.asarray(audio, dtype=np.float32)[-size:]
    padded = np.zeros(size, dtype=np.float32)
    padded[size - len(samples) :] = samples
    centred = padded - padded.mean()
    scaled: Frame = centred / np.sqrt(centred.var() + 1e-7)
    return scaled.astype(np.float32, copy=False)
