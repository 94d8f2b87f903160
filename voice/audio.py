"""Sample-level conventions and helpers shared by the voice parts.

Everything inside the loop is mono float32 in [-1, 1] at 16 kHz, in frames of 512 samples
(32 ms, the window Silero VAD reads), so the microphone, the speaker reference, the VAD, the
echo suppressor and the endpointer all count in the same unit.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

SAMPLE_RATE = 16_000
FRAME_SAMPLES = 512
FRAME_S = FRAME_SAMPLES / SAMPLE_RATE

Frame = NDArray[np.float32]

# The level reported for digital silence (log of zero).
SILENCE_DBFS = -100.0


def resample(audio: NDArray[np.float32], from_rate: int, to_rate: int) -> NDArray[np.float32]:
    """Linear-interpolation resampling; enough for speech going into Whisper."""
    if from_rate == to_rate or len(audio) == 0:
        return audio.astype(np.float32, copy=False)
    count = round(len(audio) * to_rate / from_rate)
    positions = np.arange(count, dtype=np.float64) * (from_rate / to_rate)
    return np.interp(positions, np.arange(len(audio)), audio).astype(np.float32)


def level_dbfs(frame: NDArray[np.float32]) -> float:
    """RMS level in dB relative to full scale (0 dBFS = a full-scale square wave)."""
    if len(frame) == 0:
        return SILENCE_DBFS
    rms = float(np.sqrt(np.mean(np.square(frame, dtype=np.float64))))
    return max(SILENCE_DBFS, 20.0 * np.log10(rms)) if rms > 0 else SILENCE_DBFS
