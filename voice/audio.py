"""Small sample-level helpers shared by the voice parts."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def resample(audio: NDArray[np.float32], from_rate: int, to_rate: int) -> NDArray[np.float32]:
    """Linear-interpolation resampling; enough for speech going into Whisper."""
    if from_rate == to_rate or len(audio) == 0:
        return audio.astype(np.float32, copy=False)
    count = round(len(audio) * to_rate / from_rate)
    positions = np.arange(count, dtype=np.float64) * (from_rate / to_rate)
    return np.interp(positions, np.arange(len(audio)), audio).astype(np.float32)
