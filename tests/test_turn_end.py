"""The end of a turn judged by how the speech sounds (turn_end.py, smart-turn v3): the
endpointer reports a short pause, a judge says whether the speaker has finished, and a
finished turn ends then instead of after the long silence."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from benchmarks.speech_data import librivox_clips
from voice.audio import FRAME_S, SAMPLE_RATE, Frame
from voice.device import SimulatedDevice, load_wav
from voice.endpoint import (
    EndpointConfig,
    Endpointer,
    EndpointEvent,
    Paused,
    SpeechStarted,
    Utterance,
    segment,
)
from voice.turn_end import COMPLETE_AT, WINDOW_S, SmartTurn, window
from voice.vad import SileroVAD

CONFIG = EndpointConfig(pause_ms=128, end_silence_ms=640, post_roll_ms=0)  # 4 and 20 frames


def feed(endpointer: Endpointer, decisions: Sequence[bool], start: int = 0) -> list[EndpointEvent]:
    frame = np.full(round(FRAME_S * SAMPLE_RATE), 0.01, dtype=np.float32)
    events = [
        endpointer.feed(frame, speech, (start + i + 1) * FRAME_S)
        for i, speech in enumerate(decisions)
    ]
    return [event for event in events if event is not None]


def test_a_pause_is_reported_once_and_a_judged_finish_ends_the_turn_there() -> None:
    endpointer = Endpointer(CONFIG)
    events = feed(endpointer, [False] * 5 + [True] * 20 + [False] * 6)
    started, paused = events
    assert isinstance(started, SpeechStarted) and isinstance(paused, Paused)
    assert paused.at == pytest.approx(29 * FRAME_S), "after 4 frames of silence"
    # The utterance as it would be emitted (no post-roll here): the same audio if it ends now.
    assert len(paused.audio) == (5 + 20) * round(FRAME_S * SAMPLE_RATE)
    assert paused.ended_at == pytest.approx(25 * FRAME_S)
    ended = endpointer.finish(paused.number, 31 * FRAME_S)  # the judgement came 2 frames later
    assert isinstance(ended, Utterance)
    assert ended.ended_at == pytest.approx(25 * FRAME_S)
    assert ended.emitted_at == pytest.approx(31 * FRAME_S), "not 640 ms after the speech"
    assert not endpointer.speaking


def test_speech_after_a_pause_voids_its_judgement() -> None:
    endpointer = Endpointer(CONFIG)
    first = feed(endpointer, [True] * 20 + [False] * 4)[-1]
    assert isinstance(first, Paused)
    more = feed(endpointer, [True] * 10 + [False] * 2, start=24)
    assert more == [], "no new pause yet"
    assert endpointer.finish(first.number, 36 * FRAME_S) is None, "they went on speaking"
    assert endpointer.speaking
    second = feed(endpointer, [False] * 2, start=36)[-1]
    assert isinstance(second, Paused) and second.number != first.number
    # Unjudged, or judged unfinished: the long silence ends it.
    (ended,) = feed(endpointer, [False] * 16, start=38)
    assert isinstance(ended, Utterance) and ended.emitted_at == pytest.approx(54 * FRAME_S)


def test_a_pause_in_a_sound_too_short_to_be_speech_is_not_put_to_the_judge() -> None:
    endpointer = Endpointer(CONFIG)  # min_utterance_ms 250: 8 frames
    assert [type(e) for e in feed(endpointer, [True] * 5 + [False] * 6)] == [SpeechStarted]


def test_the_models_input_is_the_last_eight_seconds_scaled() -> None:
    tone = np.sin(np.arange(3 * SAMPLE_RATE) / 5).astype(np.float32) * 0.1
    short = window(tone)
    assert len(short) == WINDOW_S * SAMPLE_RATE and abs(float(short.mean())) < 1e-4
    assert float(short.std()) == pytest.approx(1.0, abs=1e-3)
    assert float(np.abs(short[:SAMPLE_RATE]).max()) == pytest.approx(
        float(np.abs(short[:SAMPLE_RATE]).min())
    ), "silence before a shorter utterance"
    long = np.concatenate([np.ones(SAMPLE_RATE, np.float32), tone, tone, tone])
    assert len(window(long)) == WINDOW_S * SAMPLE_RATE


# --- the real model on real speech -----------------------------------------------------------

CLIP = "sense_and_sensibility_01_austen_64kb-0890"  # "unless to be rather cold hearted ..."


def recording() -> tuple[Frame, list[dict[str, object]]]:
    wav = next(
        path for path, _ in librivox_clips(Path(__file__).parent / ".data") if path.stem == CLIP
    )
    words = json.loads(wav.with_suffix(".json").read_text(encoding="utf-8"))["w"]
    return load_wav(wav), [word for word in words if not str(word["t"]).startswith("<")]


def until(audio: Frame, seconds: float, pause_s: float = 0.2) -> Frame:
    return np.concatenate(
        [audio[: round(seconds * SAMPLE_RATE)], np.zeros(round(pause_s * SAMPLE_RATE), np.float32)]
    )


def word_end(word: dict[str, object]) -> float:
    return float(word["b"]) + float(word["d"])  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_finished_sentence_is_judged_finished_and_a_broken_off_one_is_not(
    turn_judge: SmartTurn,
) -> None:
    """Each on its side of the app's threshold by a clear margin (the score itself moves a
    little with the CPU's kernels: 0.78 for the finished one on an AVX2-only EPYC)."""
    audio, words = recording()
    margin = 0.2
    finished = turn_judge.finished(until(audio, word_end(words[-1])))
    assert finished > COMPLETE_AT + margin, "...is to be ill disposed."
    rather = [i for i, word in enumerate(words) if str(word["t"]).startswith("rather")][-1]
    broken_off = until(audio, word_end(words[rather]))
    assert turn_judge.finished(broken_off) < COMPLETE_AT - margin, (
        "unless to be rather cold hearted and rather"
    )


@pytest.mark.slow
def test_a_judged_turn_ends_a_long_silence_sooner(turn_judge: SmartTurn) -> None:
    audio, _ = recording()
    device = SimulatedDevice(
        np.concatenate([np.zeros(SAMPLE_RATE // 2, np.float32), audio]),
        trailing_silence_s=1.5,
        noise_dbfs=-70.0,
    )
    frames = [(frame.mic, frame.at) for frame in device.frames()]
    config = EndpointConfig(pause_ms=200, end_silence_ms=600)

    def waited(judged: SmartTurn | None) -> float:
        found = [
            event
            for event in segment(frames, SileroVAD(), Endpointer(config), judge=judged)
            if isinstance(event, Utterance)
        ]
        assert len(found) == 1, "one turn, not cut at a pause inside it"
        return found[0].emitted_at - found[0].ended_at

    assert waited(None) >= 0.6
    assert waited(turn_judge) < 0.35
