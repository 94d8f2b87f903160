"""Endpointing: frames marked speech or not, cut into utterances.

The caller decides per frame whether it holds the user's speech (Silero VAD, possibly with the
echo of the assistant's own voice suppressed), and the ``Endpointer`` turns that stream into
events: speech started, an utterance ended (with its audio), or a start that came to nothing.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from voice.audio import FRAME_S, FRAME_SAMPLES, SILENCE_DBFS, Frame, level_dbfs
from voice.turn_end import COMPLETE_AT, TurnJudge
from voice.vad import SpeechDetector

# Silero's own default decision threshold.
SPEECH_THRESHOLD = 0.5


@dataclass(frozen=True)
class EndpointConfig:
    pre_roll_ms: int = 300
    """Audio kept from before the first speech frame, so a soft onset reaches the recogniser."""
    onset_frames: int = 3
    """Consecutive speech frames (32 ms each) that start an utterance; fewer are clicks."""
    end_silence_ms: int = 600
    """Silence that ends the turn. Chosen by ``python -m benchmarks.endpointing``: the smallest
    value that splits at most 5 % of turns of each kind (read passages, multi-clause and
    two-sentence speech); at 500 ms one in four read passages was split at a reader's pause,
    and the longest pause inside a turn the VAD saw was 512 ms. Costs ~680 ms (p50) from the
    end of speech to the utterance (75 ms of it Silero's lag)."""
    pause_ms: int = 200
    """A pause this long is reported (``Paused``): what was said so far can be transcribed
    and read ahead, and a turn judge, where there is one (turn_end.py), asked whether the user
    has finished (then the turn ends there instead of at ``end_silence_ms``)."""
    partial_ms: int = 1000
    """While the speaker goes on without a pause, the utterance so far is reported this often
    (``Speaking``), so what was said can be read ahead before the pause comes; 0: never."""
    min_utterance_ms: int = 250
    """From first to last speech frame; shorter ones (a cough, a knock) are dropped."""
    max_utterance_s: float = 30.0
    """Longer speech is cut here and emitted with ``cut=True``, and listening goes on."""
    post_roll_ms: int = 150
    """Audio kept after the last speech frame, so a fading last consonant is not clipped."""
    meter_release_ms: int = 300
    """Time constant of the level meter's fall (it rises at once, like a peak meter)."""


@dataclass(frozen=True)
class SpeechStarted:
    at: float
    """Start of the first speech frame."""


@dataclass(frozen=True)
class Utterance:
    audio: Frame
    """The whole utterance at 16 kHz, pre-roll and post-roll included."""
    started_at: float
    """Start of the first speech frame (or of the continuation after a cut)."""
    ended_at: float
    """End of the last speech frame, not of the silence that confirmed it."""
    emitted_at: float
    """When the endpointer decided: ``emitted_at - ended_at`` is the end-of-turn wait."""
    cut: bool
    """The maximum length was reached; the speaker may still be talking."""

    @property
    def duration_s(self) -> float:
        return self.ended_at - self.started_at


@dataclass(frozen=True)
class Paused:
    """The speaker has paused for ``pause_ms``: whether they have finished is for a turn judge
    to say (then ``Endpointer.finish(number, ...)`` ends the utterance)."""

    audio: Frame
    """The utterance as it would be emitted now (its post-roll included): if the speaker has
    finished, this is the utterance's audio."""
    number: int
    at: float
    ended_at: float
    """End of the last speech frame: the utterance's ``ended_at`` if none follows."""


@dataclass(frozen=True)
class Speaking:
    """The speaker goes on: the utterance so far, ``partial_ms`` more of it since the last
    report (or pause)."""

    audio: Frame
    at: float


@dataclass(frozen=True)
class SpeechDropped:
    """Speech started but ended too short to be an utterance; listening state is over."""

    started_at: float
    ended_at: float


EndpointEvent = SpeechStarted | Utterance | SpeechDropped | Paused | Speaking


class Endpointer:
    """One frame at a time, in order. Holds at most ``max_utterance_s`` plus the pre-roll."""

    def __init__(self, config: EndpointConfig | None = None) -> None:
        self.config = config = config or EndpointConfig()
        self._pre_roll_frames = _frames(config.pre_roll_ms / 1000)
        self._end_frames = max(1, _frames(config.end_silence_ms / 1000))
        self._pause_frames = max(1, _frames(config.pause_ms / 1000))
        self._partial_frames = _frames(config.partial_ms / 1000)
        self._pauses = 0
        self._min_frames = _frames(config.min_utterance_ms / 1000)
        self._max_frames = max(config.onset_frames + 1, _frames(config.max_utterance_s))
        self._post_frames = _frames(config.post_roll_ms / 1000)
        self._release = math.exp(-FRAME_S * 1000 / config.meter_release_ms)
        self.level_dbfs = SILENCE_DBFS
        """The input level, smoothed for a meter."""
        self.reset()

    def reset(self) -> None:
        """Forget any speech in progress (e.g. the stream restarts)."""
        self._idle: deque[Frame] = deque(maxlen=self._pre_roll_frames + self.config.onset_frames)
        self._onset = 0
        self._speech: list[Frame] | None = None  # the utterance so far; None while idle
        self._last_speech = -1  # index in _speech of the last speech frame
        self._silence = 0
        self._started_at = 0.0
        self._ended_at = 0.0
        self._continued = False
        self._open_pause: int | None = None  # the pause under way, if one was reported
        self._reported = 0  # frames of the utterance when it was last reported (or paused)

    @property
    def speaking(self) -> bool:
        return self._speech is not None

    @property
    def buffered_samples(self) -> int:
        frames = len(self._idle) if self._speech is None else len(self._speech)
        return frames * FRAME_SAMPLES

    def feed(self, frame: Frame, is_speech: bool, at: float) -> EndpointEvent | None:
        """``at`` is the time at the end of ``frame``."""
        self._meter(frame)
        if self._speech is None:
            return self._listen(frame, is_speech, at)
        self._speech.append(frame)
        if is_speech:
            self._last_speech = len(self._speech) - 1
            self._silence = 0
            self._ended_at = at
            self._open_pause = None
        else:
            self._silence += 1
        if self._silence >= self._end_frames:
            event = self._emit(at, cut=False)
            self._speech = None
            return event
        if len(self._speech) >= self._max_frames:
            event = self._emit(at, cut=True)
            # The speaker is mid-sentence: the next piece starts now, with no onset and no
            # minimum, since it is part of speech already confirmed.
            self._speech, self._last_speech, self._continued = [], -1, True
            self._reported = 0
            self._started_at = at
            return event
        if self._silence == self._pause_frames and self._long_enough():
            self._pauses += 1
            self._open_pause = self._pauses
            self._reported = len(self._speech)
            return Paused(self._audio(), self._pauses, at, self._ended_at)
        if (
            is_speech
            and self._partial_frames
            and len(self._speech) - self._reported >= self._partial_frames
            and self._long_enough()
        ):
            self._reported = len(self._speech)
            return Speaking(self._audio(), at)
        return None

    def finish(self, number: int, at: float) -> Utterance | SpeechDropped | None:
        """The speaker was judged finished at pause ``number``: the utterance ends now (``at``,
        the end of the last frame fed), unless they have spoken again since (None)."""
        if self._speech is None or self._open_pause != number:
            return None
        event = self._emit(at, cut=False)
        self._speech = None
        return event

    def begin(self, at: float, speech_s: float) -> SpeechStarted | None:
        """The caller has confirmed speech of the last ``speech_s`` seconds up to ``at`` (the
        end of the last frame fed) by other means, a barge-in: the utterance starts without
        waiting for an onset, the pre-roll before it included. None if one is under way."""
        if self._speech is not None:
            return None
        return self._start(at, min(len(self._idle), _frames(speech_s)))

    def _listen(self, frame: Frame, is_speech: bool, at: float) -> SpeechStarted | None:
        self._idle.append(frame)
        self._onset = self._onset + 1 if is_speech else 0
        if self._onset < self.config.onset_frames:
            return None
        return self._start(at, self.config.onset_frames)

    def _start(self, at: float, speech_frames: int) -> SpeechStarted:
        self._speech = list(self._idle)
        self._idle.clear()
        self._onset = self._silence = 0
        self._last_speech = len(self._speech) - 1
        self._started_at = at - speech_frames * FRAME_S
        self._ended_at = at
        self._continued = False
        self._open_pause = None
        self._reported = 0
        return SpeechStarted(self._started_at)

    def _emit(self, at: float, *, cut: bool) -> Utterance | SpeechDropped:
        assert self._speech is not None
        spoken = self._last_speech + 1
        if spoken <= 0 or not self._long_enough():
            return SpeechDropped(self._started_at, max(self._started_at, self._ended_at))
        return Utterance(self._audio(), self._started_at, self._ended_at, at, cut)

    def _audio(self) -> Frame:
        """The speech so far and its post-roll."""
        assert self._speech is not None
        end = min(len(self._speech), self._last_speech + 1 + self._post_frames)
        return np.concatenate(self._speech[:end]).astype(np.float32, copy=False)

    def _long_enough(self) -> bool:
        return self._continued or (
            round((self._ended_at - self._started_at) / FRAME_S) >= self._min_frames
        )

    def _meter(self, frame: Frame) -> None:
        level = level_dbfs(frame)
        if level >= self.level_dbfs:
            self.level_dbfs = level
        else:
            self.level_dbfs = level + self._release * (self.level_dbfs - level)


def _frames(seconds: float) -> int:
    return round(seconds / FRAME_S)


def segment(
    frames: Iterable[tuple[Frame, float]],
    detector: SpeechDetector,
    endpointer: Endpointer,
    threshold: float = SPEECH_THRESHOLD,
    judge: TurnJudge | None = None,
) -> Iterator[EndpointEvent]:
    """The events for a stream of (frame, time at its end), speech decided by ``detector``
    alone: the plain path with no echo to suppress (tests, benchmarks, push-to-talk). A pause
    is put to ``judge`` at once (the stream waits for it), and yielded too."""
    for frame, at in frames:
        event = endpointer.feed(frame, detector.probability(frame) >= threshold, at)
        if event is not None:
            yield event
        if not isinstance(event, Paused) or judge is None:
            continue
        if judge.finished(event.audio) >= COMPLETE_AT:
            ended = endpointer.finish(event.number, at)
            if ended is not None:
                yield ended
