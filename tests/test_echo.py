"""Echo cancellation and barge-in on real audio: the assistant's Piper voice as the echo, LibriVox
readers as the user (the scenarios themselves live in benchmarks.echo_suppression)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from assistant.model_paths import ProfileModels
from assistant.settings import Settings
from benchmarks.echo_suppression import (
    Audio,
    EchoPath,
    canceller_costs,
    convolve,
    load_users,
    make_reply,
    padded,
    run_echo,
    run_interruptions,
    synthesize,
)
from benchmarks.stats import percentiles
from voice.audio import FRAME_SAMPLES, Frame
from voice.echo import EchoCanceller, EchoSuppressor
from voice.vad import SileroVAD

DATA = Path(__file__).parent / ".data"


@pytest.fixture(scope="module")
def voices(quality_settings: Settings) -> list[Audio]:
    paths = ProfileModels(quality_settings).tts()
    # Repeatable: with Piper's own noise each run heard other replies, and one suite run of
    # several had 2 early barge-ins in 80 (the bar is 1).
    return synthesize(paths.model, paths.config, varied=False)


@pytest.fixture(scope="module")
def users() -> list[Audio]:
    return load_users(DATA)


@pytest.fixture(scope="module")
def vad() -> SileroVAD:
    return SileroVAD()


def frames(audio: Audio) -> list[Frame]:
    count = len(audio) // FRAME_SAMPLES
    return [
        audio[i * FRAME_SAMPLES : (i + 1) * FRAME_SAMPLES].astype(np.float32) for i in range(count)
    ]


def test_frames_must_be_whole() -> None:
    with pytest.raises(ValueError, match="512"):
        EchoCanceller().cancel(np.zeros(480, np.float32), np.zeros(480, np.float32))


def test_canceller_learns_a_room_from_real_speech(users: list[Audio]) -> None:
    """A LibriVox reader played through a delayed, reverberant, low-passed path: after a few
    seconds the canceller removes most of the echo (the noise 20 dB under it caps what it can)."""
    rng = np.random.default_rng(4)
    # The noise is added here, relative to the echo, so noise_dbfs goes unused.
    path = EchoPath(
        delay_ms=90.0, cutoff_hz=4000.0, room_db=-12.0, room_rt60_s=0.25, noise_dbfs=-200, seed=5
    )
    reading = np.concatenate(users)
    played = padded(reading, len(reading) // FRAME_SAMPLES)
    echo = convolve(played, path.response())
    mic = echo + rng.standard_normal(len(echo)) * np.sqrt(np.mean(echo**2)) * 0.1
    canceller = EchoCanceller()
    residual = np.concatenate(
        [canceller.cancel(m, p)[0] for m, p in zip(frames(mic), frames(played), strict=True)]
    ).astype(np.float64)
    later = slice(10 * 16_000, None)  # after 10 s
    erle_db = 10 * np.log10(
        np.sum(echo[later] ** 2) / np.sum((residual - (mic - echo))[later] ** 2)
    )
    print(f"\ncanceller ERLE after 10 s of LibriVox: {erle_db:.1f} dB")
    assert erle_db >= 15


@pytest.mark.slow
def test_the_assistants_own_voice_never_barges_in(voices: list[Audio], vad: SileroVAD) -> None:
    result = run_echo(voices, vad, replies=50, seed=0)
    cost = percentiles(result.frame_ms)
    print(
        f"\necho only: {result.false_barge_ins}/{result.replies} replies with a false barge-in "
        f"({result.false_barge_in_rate:.1%}), {result.first_reply_false_barge_ins}/"
        f"{result.first_replies} on a fresh suppressor; "
        f"{result.user_frames}/{result.playing_frames} echo frames taken for the user; "
        f"process() {cost['p50']:.2f} ms p50, {cost['p95']:.2f} ms p95 per 32 ms frame"
    )
    assert result.replies >= 50
    assert result.false_barge_in_rate <= 0.02
    assert result.first_reply_false_barge_ins == 0


@pytest.mark.slow
def test_a_user_talking_over_a_reply_barges_in_within_300_ms(
    voices: list[Audio], users: list[Audio], vad: SileroVAD
) -> None:
    # Piper samples its voice's noise inside the model, so the replies differ from run to run:
    # 80 cases keep a 95 % bar from failing on a couple of unlucky ones.
    result = run_interruptions(voices, users, vad, SileroVAD(), cases=80, seed=1)
    delay = percentiles(result.delays_ms)
    print(
        f"\ninterruptions: {result.detected}/{result.cases} detected within 300 ms "
        f"({result.detection_rate:.0%}), delay p50 {delay['p50']:.0f} ms, p95 "
        f"{delay['p95']:.0f} ms; {result.early} barge-ins before the user started"
    )
    assert result.cases >= 50
    assert result.detection_rate >= 0.95
    assert result.early <= 0.02 * result.cases


@pytest.mark.slow
def test_noise_or_silence_while_playing_is_not_the_user(
    voices: list[Audio], vad: SileroVAD
) -> None:
    """Headphones (no echo reaches the microphone), then a muted microphone."""
    rng = np.random.default_rng(2)
    reply = make_reply(voices, rng, 3)
    suppressor = EchoSuppressor(vad=vad)
    noise = rng.standard_normal(len(reply)) * 10 ** (-45 / 20)
    for mic in (noise, np.zeros(len(reply))):
        verdicts = [
            suppressor.process(m, p) for m, p in zip(frames(mic), frames(reply), strict=True)
        ]
        assert not any(v.user_speech or v.barge_in for v in verdicts)
        assert all(np.isfinite(v.residual).all() for v in verdicts)


@pytest.mark.slow
def test_with_nothing_played_it_is_plain_vad(users: list[Audio], vad: SileroVAD) -> None:
    rng = np.random.default_rng(3)
    mic = users[0] + rng.standard_normal(len(users[0])) * 10 ** (-50 / 20)
    suppressor = EchoSuppressor(vad=vad)
    plain = SileroVAD()
    silence = np.zeros(FRAME_SAMPLES, np.float32)
    heard = 0
    for frame in frames(mic):
        verdict = suppressor.process(frame, silence)
        assert np.array_equal(verdict.residual, frame)
        assert verdict.speech_probability == pytest.approx(plain.probability(frame), abs=1e-6)
        assert not verdict.barge_in
        heard += verdict.user_speech
    print(f"\nno playback: {heard}/{len(frames(mic))} frames of a LibriVox reading heard")
    assert heard >= 0.6 * len(frames(mic))


@pytest.mark.slow
def test_the_canceller_costs_well_under_a_frame(voices: list[Audio]) -> None:
    cost = percentiles(canceller_costs(voices))
    print(f"\ncanceller alone: {cost['p50']:.2f} ms p50, {cost['p95']:.2f} ms p95 per frame")
    assert cost["p50"] < 2.0
