"""Does the assistant take its own voice for the user, and does it hear the user over it?

    python -m benchmarks.echo_suppression [--replies 50] [--interruptions 50] [--seed 0] [--json]

All audio is real: the replies are the Piper voice the assistant speaks with (SENTENCES, put
together one to three at a time from a random point of the first), the user is the LibriVox
recordings of ``benchmarks.speech_data``. What the microphone hears is simulated from them: each
session draws an echo path (a device delay of 10-120 ms, a room tail 10-16 dB under the direct
sound with an RT60 of 0.1-0.3 s, a speaker low-pass at 3-6 kHz, the whole 10 dB under what is
played) and white noise at -50 to -40 dBFS. One ``EchoSuppressor`` follows each session of
SESSION_REPLIES replies, as in a running assistant, with 0.4 s of silence after each reply.

* Echo: replies with nobody talking; a reply during which a barge-in is declared is a false
  barge-in. The first reply of every session meets a fresh suppressor.
* Interruptions: after WARM_UP_REPLIES replies per session, each reply is interrupted between
  0.3 s and LATEST_INTERRUPTION_S in by a LibriVox segment starting in one of the reader's
  pauses, 0 to 6 dB under the echo. The user's onset is the first frame where Silero VAD hears
  the clean user track; an interruption is detected when the barge-in comes after the user
  started and at most DETECTION_WINDOW_MS after the onset (a delay can be negative when the
  residual's VAD hears the first syllable before the clean track's does). Playback stops at the
  barge-in, as the voice loop stops it, and the echo dies away.
* Cost: wall time of ``EchoSuppressor.process`` per frame (Silero included) over the echo run,
  and of ``EchoCanceller.cancel`` alone per frame while something is played.

``--json`` prints ``{"false_barge_in_rate", "false_barge_ins", "replies",
"first_reply_false_barge_ins", "first_replies", "echo_frames_taken_for_user", "detection_rate",
"interruptions", "early_barge_ins", "delay_ms": {"p50", "p95"}, "frame_ms": {"p50", "p95"},
"canceller_ms": {"p50", "p95"}}``; otherwise one line per figure. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from benchmarks.stats import percentiles
from voice.audio import FRAME_SAMPLES, SAMPLE_RATE, Frame
from voice.echo import EchoCanceller, EchoConfig, EchoSuppressor
from voice.vad import SpeechDetector

# Varied replies: questions, numbers, lists, short and long, so the echo covers many phonemes.
SENTENCES = (
    "Sure, I added milk, eggs and bread to your list.",
    "Your dentist appointment is next Tuesday at three.",
    "It will be sunny, with light rain after six.",
    "Would you like a reminder tomorrow morning?",
    "Porto is about two hours away by plane.",
    "I found four notes about your sister Beatrix.",
    "Okay.",
    "Try roasted vegetables with chickpeas and lemon.",
    "You told me you prefer tea over coffee.",
    "The timer is set for fifteen minutes.",
)
SESSION_REPLIES = 10
WARM_UP_REPLIES = 2
DETECTION_WINDOW_MS = 300.0
ECHO_GAIN_DB = -10.0
USER_BELOW_ECHO_DB = (0.0, 6.0)
# The user interrupts between 0.3 s and this far into a reply (the rest would only cost time).
LATEST_INTERRUPTION_S = 3.0
GAP_FRAMES = round(0.4 * SAMPLE_RATE / FRAME_SAMPLES)
_FRAME_MS = 1000 * FRAME_SAMPLES / SAMPLE_RATE
DEFAULT_CONFIG = EchoConfig()

Audio = NDArray[np.float64]


@dataclass(frozen=True)
class EchoPath:
    """How the played signal reaches the microphone in one simulated session."""

    delay_ms: float
    cutoff_hz: float
    room_db: float
    room_rt60_s: float
    noise_dbfs: float
    seed: int

    @staticmethod
    def draw(rng: np.random.Generator) -> EchoPath:
        return EchoPath(
            delay_ms=float(rng.uniform(10, 120)),
            cutoff_hz=float(rng.uniform(3000, 6000)),
            room_db=float(rng.uniform(-16, -10)),
            room_rt60_s=float(rng.uniform(0.1, 0.3)),
            noise_dbfs=float(rng.uniform(-50, -40)),
            seed=int(rng.integers(2**31)),
        )

    def response(self) -> Audio:
        """Impulse response with ECHO_GAIN_DB of energy: delay, room tail, speaker low-pass."""
        rng = np.random.default_rng(self.seed)
        delay = round(self.delay_ms * SAMPLE_RATE / 1000)
        room_length = round(0.12 * SAMPLE_RATE)  # keeps delay + room inside a 250 ms tail
        times = np.arange(room_length) / SAMPLE_RATE
        room = rng.standard_normal(room_length) * 10 ** (-3 * times / self.room_rt60_s)
        room[:32] = 0.0  # the first reflection arrives a couple of milliseconds late
        room *= math.sqrt(10 ** (self.room_db / 10) / float(np.sum(room**2)))
        room[0] = 1.0
        taps = np.arange(63) - 31
        low_pass = np.sinc(2 * self.cutoff_hz / SAMPLE_RATE * taps) * np.hamming(len(taps))
        response = np.concatenate((np.zeros(delay), np.convolve(room, low_pass / low_pass.sum())))
        return response * math.sqrt(10 ** (ECHO_GAIN_DB / 10) / float(np.sum(response**2)))

    def noise(self, length: int, rng: np.random.Generator) -> Audio:
        return rng.standard_normal(length) * 10 ** (self.noise_dbfs / 20)


def convolve(signal: Audio, response: Audio) -> Audio:
    """Linear convolution through the FFT, cut to the signal's length."""
    size = 1 << (len(signal) + len(response) - 1).bit_length()
    spectrum = np.fft.rfft(signal, size) * np.fft.rfft(response, size)
    return np.fft.irfft(spectrum, size)[: len(signal)]


def active_level_db(audio: Audio) -> float:
    """Speech level over the frames within 30 dB of the loudest, so pauses do not count."""
    frames = audio[: len(audio) // FRAME_SAMPLES * FRAME_SAMPLES].reshape(-1, FRAME_SAMPLES)
    energies = np.mean(frames**2, axis=1)
    active = energies[energies >= energies.max() * 1e-3]
    return 10 * math.log10(float(np.mean(active)) + 1e-20)


def frames_of(audio: Audio) -> int:
    return math.ceil(len(audio) / FRAME_SAMPLES)


def padded(audio: Audio, frames: int) -> Audio:
    out = np.zeros(frames * FRAME_SAMPLES)
    out[: min(len(audio), len(out))] = audio[: len(out)]
    return out


def make_reply(voices: Sequence[Audio], rng: np.random.Generator, sentences: int) -> Audio:
    """Sentences in a random order with the pauses Piper leaves between them, starting at a
    random point of the first, so no two replies line up the same way."""
    picks = rng.choice(len(voices), size=sentences, replace=False)
    parts: list[Audio] = []
    for index in picks:
        voice = voices[int(index)]
        if not parts:
            voice = voice[int(rng.integers(0, len(voice) // 4)) :]
        parts.extend((voice, np.zeros(int(rng.uniform(0.1, 0.4) * SAMPLE_RATE))))
    return np.concatenate(parts)


def user_segment(users: Sequence[Audio], rng: np.random.Generator, seconds: float) -> Audio:
    """Up to ``seconds`` of a LibriVox clip starting in one of its pauses, as a user starts
    talking from silence (a cut into the middle of a word would not be an onset)."""
    clip = users[int(rng.integers(len(users)))]
    length = min(len(clip), round(seconds * SAMPLE_RATE))
    frames = clip[: len(clip) // FRAME_SAMPLES * FRAME_SAMPLES].reshape(-1, FRAME_SAMPLES)
    levels = 10 * np.log10(np.mean(frames**2, axis=1) + 1e-20)
    pauses = np.flatnonzero(levels < active_level_db(clip) - 20) * FRAME_SAMPLES
    pauses = pauses[pauses <= len(clip) - length]
    start = int(rng.choice(pauses)) if len(pauses) else 0
    return clip[start : start + length]


@dataclass
class EchoResult:
    replies: int = 0
    false_barge_ins: int = 0
    first_replies: int = 0
    first_reply_false_barge_ins: int = 0
    # Frames judged to be the user while only echo and noise were there.
    playing_frames: int = 0
    user_frames: int = 0
    frame_ms: list[float] = field(default_factory=list)

    @property
    def false_barge_in_rate(self) -> float:
        return self.false_barge_ins / max(self.replies, 1)


@dataclass
class InterruptionResult:
    cases: int = 0
    detected: int = 0
    # Barge-ins before the user started: echo taken for the user.
    early: int = 0
    delays_ms: list[float] = field(default_factory=list)

    @property
    def detection_rate(self) -> float:
        return self.detected / max(self.cases, 1)


class _Session:
    """One suppressor in front of one simulated room."""

    def __init__(
        self, path: EchoPath, vad: SpeechDetector, config: EchoConfig, rng: np.random.Generator
    ) -> None:
        self.path = path
        self.response = path.response()
        self.suppressor = EchoSuppressor(config, vad)
        self.rng = rng
        self.frame_ms: list[float] = []

    def step(self, mic: Audio, played: Audio, frame: int) -> tuple[bool, bool]:
        """(user_speech, barge_in) for frame ``frame`` of the two tracks."""
        span = slice(frame * FRAME_SAMPLES, (frame + 1) * FRAME_SAMPLES)
        mic_frame: Frame = np.clip(mic[span], -1.0, 1.0).astype(np.float32)
        played_frame: Frame = played[span].astype(np.float32)
        start = time.perf_counter()
        verdict = self.suppressor.process(mic_frame, played_frame)
        self.frame_ms.append(1000 * (time.perf_counter() - start))
        return verdict.user_speech, verdict.barge_in

    def mic_for(self, played: Audio) -> Audio:
        return convolve(played, self.response) + self.path.noise(len(played), self.rng)

    def play(self, reply: Audio) -> tuple[bool, int, int]:
        """A reply and the pause after it with nobody speaking: (barge-in, frames played,
        frames judged the user while playing)."""
        self.suppressor.reset_barge_in()
        played = padded(reply, frames_of(reply) + GAP_FRAMES)
        mic = self.mic_for(played)
        barge_in, playing, user = False, 0, 0
        for frame in range(frames_of(played)):
            speech, barge = self.step(mic, played, frame)
            barge_in |= barge
            if self.suppressor.canceller.playing:
                playing += 1
                user += speech
        return barge_in, playing, user


def run_echo(
    voices: Sequence[Audio],
    vad: SpeechDetector,
    *,
    replies: int = 50,
    seed: int = 0,
    config: EchoConfig = DEFAULT_CONFIG,
) -> EchoResult:
    """Replies with nobody talking, SESSION_REPLIES per session, each session a fresh room."""
    rng = np.random.default_rng(seed)
    result = EchoResult()
    session: _Session | None = None
    for index in range(replies):
        first = index % SESSION_REPLIES == 0
        if first:
            if session is not None:
                result.frame_ms += session.frame_ms
            session = _Session(EchoPath.draw(rng), vad, config, rng)
        assert session is not None
        reply = make_reply(voices, rng, int(rng.integers(1, 3)))
        barge_in, playing, user = session.play(reply)
        result.replies += 1
        result.false_barge_ins += barge_in
        result.first_replies += first
        result.first_reply_false_barge_ins += first and barge_in
        result.playing_frames += playing
        result.user_frames += user
    if session is not None:
        result.frame_ms += session.frame_ms
    return result


def speech_onset(
    track: Audio, first_frame: int, last_frame: int, vad: SpeechDetector
) -> int | None:
    """First frame from ``first_frame`` where the VAD hears the clean track, or None."""
    vad.reset()
    for frame in range(first_frame, last_frame):
        chunk = track[frame * FRAME_SAMPLES : (frame + 1) * FRAME_SAMPLES].astype(np.float32)
        if vad.probability(chunk) >= 0.5:
            return frame
    return None


def run_interruptions(
    voices: Sequence[Audio],
    users: Sequence[Audio],
    vad: SpeechDetector,
    onset_vad: SpeechDetector,
    *,
    cases: int = 50,
    seed: int = 1,
    config: EchoConfig = DEFAULT_CONFIG,
) -> InterruptionResult:
    """The user talks over a reply; playback stops at the barge-in, as the voice loop does."""
    rng = np.random.default_rng(seed)
    result = InterruptionResult()
    while result.cases < cases:
        session = _Session(EchoPath.draw(rng), vad, config, rng)
        for _ in range(WARM_UP_REPLIES):  # the assistant has spoken before
            session.play(make_reply(voices, rng, 2))
        for _ in range(min(SESSION_REPLIES, cases - result.cases)):
            _interrupt(session, voices, users, onset_vad, result)
    return result


def _interrupt(
    session: _Session,
    voices: Sequence[Audio],
    users: Sequence[Audio],
    onset_vad: SpeechDetector,
    result: InterruptionResult,
) -> None:
    rng = session.rng
    reply = make_reply(voices, rng, 3)
    played = padded(reply, frames_of(reply))
    echo = convolve(played, session.response)
    while True:
        user = user_segment(users, rng, 1.5)
        latest = min(len(played) - len(user), round(LATEST_INTERRUPTION_S * SAMPLE_RATE))
        start = int(rng.integers(round(0.3 * SAMPLE_RATE), latest))
        user_track = np.zeros(len(played))
        user_track[start : start + len(user)] = user
        last = frames_of(user_track[: start + len(user)])
        onset = speech_onset(user_track, start // FRAME_SAMPLES, last, onset_vad)
        if onset is not None:  # otherwise a pause between two sentences: nobody to detect
            break
    below = rng.uniform(*USER_BELOW_ECHO_DB)
    user_track *= 10 ** ((active_level_db(echo) - below - active_level_db(user)) / 20)
    mic = echo + user_track + session.path.noise(len(played), rng)

    session.suppressor.reset_barge_in()
    stop = min(frames_of(played), onset + math.ceil(DETECTION_WINDOW_MS / _FRAME_MS) + 1)
    detected_at = None
    for frame in range(stop):
        if session.step(mic, played, frame)[1]:
            detected_at = frame
            break
    result.cases += 1
    if detected_at is not None and detected_at < start // FRAME_SAMPLES:
        result.early += 1
    elif detected_at is not None:
        delay = (detected_at - onset) * _FRAME_MS
        result.delays_ms.append(delay)
        result.detected += delay <= DETECTION_WINDOW_MS
    # Playback stops; the echo of what was played dies away while the user goes quiet.
    cut = detected_at + 1 if detected_at is not None else stop
    tail = padded(played[: cut * FRAME_SAMPLES], cut + GAP_FRAMES)
    tail_mic = session.mic_for(tail)
    for frame in range(cut, frames_of(tail)):
        session.step(tail_mic, tail, frame)


def canceller_costs(voices: Sequence[Audio], frames: int = 1000, seed: int = 2) -> list[float]:
    """Milliseconds per frame of the canceller alone, while playing."""
    rng = np.random.default_rng(seed)
    path = EchoPath.draw(rng)
    played = np.concatenate([make_reply(voices, rng, 3) for _ in range(frames // 100 + 1)])
    played = padded(played, frames)
    mic = convolve(played, path.response()) + path.noise(len(played), rng)
    canceller = EchoCanceller()
    costs: list[float] = []
    for frame in range(frames):
        span = slice(frame * FRAME_SAMPLES, (frame + 1) * FRAME_SAMPLES)
        mic_frame, played_frame = mic[span].astype(np.float32), played[span].astype(np.float32)
        start = time.perf_counter()
        canceller.cancel(mic_frame, played_frame)
        costs.append(1000 * (time.perf_counter() - start))
    return costs


def _rounded(values: Sequence[float]) -> dict[str, float]:
    return {name: round(value, 3) for name, value in percentiles(values).items()}


def report(
    echo: EchoResult, interruptions: InterruptionResult, canceller_ms: Sequence[float]
) -> dict[str, object]:
    return {
        "false_barge_in_rate": round(echo.false_barge_in_rate, 4),
        "false_barge_ins": echo.false_barge_ins,
        "replies": echo.replies,
        "first_reply_false_barge_ins": echo.first_reply_false_barge_ins,
        "first_replies": echo.first_replies,
        "echo_frames_taken_for_user": round(echo.user_frames / max(echo.playing_frames, 1), 4),
        "detection_rate": round(interruptions.detection_rate, 4),
        "interruptions": interruptions.cases,
        "early_barge_ins": interruptions.early,
        "delay_ms": _rounded(interruptions.delays_ms),
        "frame_ms": _rounded(echo.frame_ms),
        "canceller_ms": _rounded(canceller_ms),
    }


def synthesize(
    tts_model: Path,
    tts_config: Path,
    sentences: Sequence[str] = SENTENCES,
    varied: bool = True,
) -> list[Audio]:
    """Each sentence in the assistant's Piper voice, at SAMPLE_RATE (``varied=False``: the
    same samples on every run)."""
    from voice.tts import PiperTTS

    tts = PiperTTS(tts_model, tts_config, varied=varied)
    return [tts.speak(text).as_float(SAMPLE_RATE).astype(np.float64) for text in sentences]


def load_users(root: Path) -> list[Audio]:
    """The LibriVox recordings as float samples (already 16 kHz mono)."""
    import wave

    from benchmarks.speech_data import librivox_clips

    users: list[Audio] = []
    for path, _ in librivox_clips(root):
        with wave.open(str(path), "rb") as clip:
            if clip.getframerate() != SAMPLE_RATE or clip.getnchannels() != 1:
                raise ValueError(f"{path} is not {SAMPLE_RATE} Hz mono")
            samples = np.frombuffer(clip.readframes(clip.getnframes()), dtype=np.int16)
        users.append(samples.astype(np.float64) / 32768.0)
    return users


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--replies", type=int, default=50)
    parser.add_argument("--interruptions", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    from assistant.config import load_config
    from assistant.model_paths import ProfileModels
    from benchmarks.speech_data import DEFAULT_ROOT
    from voice.vad import SileroVAD

    print("synthesising replies...", file=sys.stderr)
    paths = ProfileModels(load_config(flags={"profile": "quality"}).settings).tts()
    voices = synthesize(paths.model, paths.config)
    users = load_users(DEFAULT_ROOT)
    vad, onset_vad = SileroVAD(), SileroVAD()
    print("replies without the user...", file=sys.stderr)
    echo = run_echo(voices, vad, replies=args.replies, seed=args.seed)
    print("interrupted replies...", file=sys.stderr)
    interruptions = run_interruptions(
        voices, users, vad, onset_vad, cases=args.interruptions, seed=args.seed + 1
    )
    figures = report(echo, interruptions, canceller_costs(voices, seed=args.seed + 2))
    if args.json:
        print(json.dumps(figures))
    else:
        for name, value in figures.items():
            print(f"{name:30} {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
