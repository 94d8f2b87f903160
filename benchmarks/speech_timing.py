"""Where a clip's speech truly ends, where the service's VAD puts that end, and the clip with
room noise mixed in: what the voice benchmark needs to time a spoken turn from the true end of
speech, clean or noisy."""

from __future__ import annotations

import wave
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voice.audio import FRAME_S, FRAME_SAMPLES, SAMPLE_RATE

# Energy windows for the true end: 10 ms.
WINDOW = SAMPLE_RATE // 100
# Speech is a window this far above the clip's noise floor (its 10th-percentile window)...
ABOVE_FLOOR_DB = 10.0
# ...and not more than this below its loud windows (99th percentile): a digitally silent
# clip's floor says nothing.
BELOW_PEAK_DB = 45.0
# In a run of this many such windows: a click in the room tone after the last word is no word.
RUN_WINDOWS = 3
# Room noise goes on this long after a noisy clip's speech: through the end-of-turn wait and
# the reply's first audio (the microphone is digital silence after it).
NOISE_TAIL_S = 4.0
# Silence the VAD hears before a clip (the headless microphone is silent between turns).
LEAD_IN_FRAMES = 16


def _window_db(audio: np.ndarray) -> np.ndarray:
    count = len(audio) // WINDOW
    windows = audio[: count * WINDOW].reshape(count, WINDOW).astype(np.float64)
    return np.asarray(10 * np.log10((windows**2).mean(axis=1) + 1e-12), dtype=np.float64)


def _speech_threshold_db(levels: np.ndarray) -> float:
    floor, peak = np.percentile(levels, 10), np.percentile(levels, 99)
    return float(max(floor + ABOVE_FLOOR_DB, peak - BELOW_PEAK_DB))


def speech_end_s(audio: np.ndarray) -> float:
    """The end of the clip's last speech (clean audio), in seconds from its start: the end of
    the last run of RUN_WINDOWS 10 ms windows above the speech threshold."""
    levels = _window_db(audio)
    if len(levels) < RUN_WINDOWS:
        return len(audio) / SAMPLE_RATE
    loud = levels >= _speech_threshold_db(levels)
    runs = np.convolve(loud.astype(int), np.ones(RUN_WINDOWS, dtype=int), mode="valid")
    ends = np.nonzero(runs == RUN_WINDOWS)[0]
    return 0.0 if len(ends) == 0 else float((ends[-1] + RUN_WINDOWS) * WINDOW / SAMPLE_RATE)


def vad_end_s(audio: np.ndarray) -> float:
    """Where the service's voice loop puts the end of the clip's last speech: the end of the
    last frame its echo suppressor (the real Silero VAD, nothing playing) takes for the user's
    speech, in seconds from the clip's start. The headless microphone starts a clip on a frame
    boundary after silence, so this is the frame the service itself marks; the service's
    stage times run from there."""
    from voice.echo import EchoSuppressor

    suppressor = EchoSuppressor()
    silence = np.zeros(FRAME_SAMPLES, dtype=np.float32)
    for _ in range(LEAD_IN_FRAMES):
        suppressor.process(silence, silence)
    last = 0
    for index, start in enumerate(range(0, len(audio), FRAME_SAMPLES), 1):
        frame = np.zeros(FRAME_SAMPLES, dtype=np.float32)
        piece = audio[start : start + FRAME_SAMPLES]
        frame[: len(piece)] = piece
        if suppressor.process(frame, silence).user_speech:
            last = index
    return last * FRAME_S


def pink_noise(samples: int, rng: np.random.Generator) -> np.ndarray:
    """Noise with a 1/f spectrum, like a room's air handling and traffic hum (unit RMS)."""
    spectrum = rng.normal(size=samples // 2 + 1) + 1j * rng.normal(size=samples // 2 + 1)
    frequencies = np.fft.rfftfreq(samples, 1 / SAMPLE_RATE)
    spectrum /= np.sqrt(np.maximum(frequencies, 20.0))  # flat below 20 Hz
    noise = np.fft.irfft(spectrum, n=samples)
    return np.asarray(noise / (np.sqrt(np.mean(noise**2)) + 1e-12), dtype=np.float64)


def with_room_noise(
    audio: np.ndarray, snr_db: float, tail_s: float, rng: np.random.Generator
) -> np.ndarray:
    """The clip with pink noise at ``snr_db`` below its speech (the RMS of its windows above
    the speech threshold), running on ``tail_s`` after it (a room does not fall silent when
    the user stops talking)."""
    levels = _window_db(audio)
    speech = levels[levels >= _speech_threshold_db(levels)]
    speech_db = 10 * np.log10(np.mean(10 ** (speech / 10)))
    noise_rms = 10 ** ((speech_db - snr_db) / 20)
    total = len(audio) + round(tail_s * SAMPLE_RATE)
    mixed = pink_noise(total, rng) * noise_rms
    mixed[: len(audio)] += audio
    peak_amplitude = np.max(np.abs(mixed))
    if peak_amplitude > 0.99:  # no clipping: scale the whole mix down
        mixed *= 0.99 / peak_amplitude
    return np.asarray(mixed, dtype=np.float32)


def write_wav(path: Path, audio: np.ndarray) -> None:
    """16 kHz float audio as a 16-bit PCM WAV file."""
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(SAMPLE_RATE)
        out.writeframes((np.clip(audio, -1.0, 1.0) * 32767.0).astype("<i2").tobytes())


@dataclass(frozen=True)
class Clip:
    """A file played to the service, and where its speech ends (seconds from its start)."""

    path: Path
    text: str
    speech_end_s: float
    vad_end_s: float

    @property
    def vad_lag_ms(self) -> float:
        """How long after the true end of speech the service's stage times start."""
        return (self.vad_end_s - self.speech_end_s) * 1000.0


def prepare_clips(
    files: Sequence[tuple[Path, str]], folder: Path, snr_db: float | None, seed: int = 0
) -> list[Clip]:
    """The files as played: as they are, or (``snr_db``) with room noise mixed in and running
    on NOISE_TAIL_S after the speech, written to ``folder``; each with its true end (from the
    clean audio) and its VAD end (from the audio played)."""
    from voice.device import load_wav

    rng = np.random.default_rng(seed)
    clips = []
    for path, text in files:
        clean = load_wav(path)
        played, played_path = clean, path
        if snr_db is not None:
            played = with_room_noise(clean, snr_db, NOISE_TAIL_S, rng)
            played_path = folder / f"{path.stem}-{snr_db:g}db.wav"
            write_wav(played_path, played)
        clips.append(Clip(played_path, text, speech_end_s(clean), vad_end_s(played)))
    return clips
