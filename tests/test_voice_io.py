"""Audio in and out without hardware: the simulated device, endpointing real speech through
real Silero VAD, and what Whisper makes of the utterances it cuts out."""

from __future__ import annotations

import importlib.abc
import math
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from benchmarks.endpointing import speech_span
from benchmarks.speech_data import librivox_clips
from voice.audio import FRAME_S, FRAME_SAMPLES, SAMPLE_RATE, Frame, level_dbfs
from voice.device import (
    AudioUnavailable,
    EchoPath,
    SimulatedDevice,
    SoundDevice,
    load_wav,
    open_sound_device,
)
from voice.endpoint import (
    EndpointConfig,
    Endpointer,
    EndpointEvent,
    Paused,
    Speaking,
    SpeechDropped,
    SpeechStarted,
    Utterance,
    segment,
)
from voice.stt import WhisperSTT
from voice.tts import PiperTTS
from voice.vad import SileroVAD
from voice.wer import word_error_rate

SENTENCE = "Please add milk, eggs and bread to my shopping list."
SECOND = "The weather today is sunny with a light breeze from the west."
RNG = np.random.default_rng(7)


@pytest.fixture(scope="module")
def clips() -> list[tuple[Path, str]]:
    return librivox_clips(Path(__file__).parent / ".data")


def listen(device: SimulatedDevice, config: EndpointConfig | None = None) -> list[EndpointEvent]:
    """Every event a fresh VAD and endpointer make of the device's microphone."""
    mic = ((frame.mic, frame.at) for frame in device.frames())
    return list(segment(mic, SileroVAD(), Endpointer(config)))


def utterances(events: Iterable[EndpointEvent]) -> list[Utterance]:
    return [event for event in events if isinstance(event, Utterance)]


def silence(seconds: float) -> Frame:
    return np.zeros(round(seconds * SAMPLE_RATE), dtype=np.float32)


def tone(seconds: float, hz: float = 440.0, amplitude: float = 0.3) -> Frame:
    t = np.arange(round(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    return (amplitude * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def pink_noise(seconds: float, dbfs: float) -> Frame:
    """1/f noise scaled to an RMS level: closer to a room (fans, traffic) than white noise."""
    count = round(seconds * SAMPLE_RATE)
    spectrum = np.fft.rfft(RNG.normal(size=count))
    spectrum /= np.sqrt(np.maximum(np.arange(len(spectrum)), 1))
    noise = np.fft.irfft(spectrum, count)
    return (noise / np.sqrt(np.mean(noise**2)) * 10 ** (dbfs / 20)).astype(np.float32)


def spoken(tts: PiperTTS, text: str) -> Frame:
    return tts.speak(text).as_float(SAMPLE_RATE)


def feed(endpointer: Endpointer, decisions: Sequence[bool]) -> list[EndpointEvent]:
    """Decisions by hand, each on a frame of a quiet tone, 32 ms apart."""
    frame = tone(FRAME_S, amplitude=0.01)
    events = [endpointer.feed(frame, d, (i + 1) * FRAME_S) for i, d in enumerate(decisions)]
    return [
        event for event in events if event is not None and not isinstance(event, Paused | Speaking)
    ]


# --- the endpointer on decisions by hand ---------------------------------------------------


def test_endpointer_needs_an_onset_and_a_minimum_length() -> None:
    config = EndpointConfig(onset_frames=3, min_utterance_ms=250, end_silence_ms=320)
    assert feed(Endpointer(config), [True, True, False] * 20) == []  # clicks: never 3 in a row
    events = feed(Endpointer(config), [False] * 5 + [True] * 4 + [False] * 12)
    assert [type(e) for e in events] == [SpeechStarted, SpeechDropped]  # 128 ms < 250 ms


def test_endpointer_times_and_pre_roll() -> None:
    config = EndpointConfig(pre_roll_ms=320, post_roll_ms=64, end_silence_ms=320)
    endpointer = Endpointer(config)
    events = feed(endpointer, [False] * 30 + [True] * 40 + [False] * 10)
    started, utterance = events
    assert isinstance(started, SpeechStarted) and isinstance(utterance, Utterance)
    assert started.at == pytest.approx(30 * FRAME_S)
    assert utterance.ended_at == pytest.approx(70 * FRAME_S)
    assert utterance.emitted_at == pytest.approx(80 * FRAME_S)  # 10 frames = 320 ms later
    assert len(utterance.audio) == (10 + 40 + 2) * FRAME_SAMPLES  # pre-roll, speech, post-roll
    assert not utterance.cut and not endpointer.speaking


def test_speech_confirmed_elsewhere_starts_an_utterance_with_its_pre_roll() -> None:
    config = EndpointConfig(pre_roll_ms=320, onset_frames=3, post_roll_ms=0, end_silence_ms=320)
    endpointer = Endpointer(config)
    assert feed(endpointer, [False] * 30) == []  # speech the caller could not yet tell apart
    started = endpointer.begin(30 * FRAME_S, 5 * FRAME_S)
    assert isinstance(started, SpeechStarted) and started.at == pytest.approx(25 * FRAME_S)
    assert endpointer.begin(30 * FRAME_S, 5 * FRAME_S) is None  # one is under way
    frame = tone(FRAME_S, amplitude=0.01)
    for i in range(31, 51):
        event = endpointer.feed(frame, i <= 40, i * FRAME_S)
    assert isinstance(event, Utterance) and event.started_at == pytest.approx(25 * FRAME_S)
    # The whole idle buffer (pre-roll and onset) and the speech that followed, no post-roll.
    assert len(event.audio) == (10 + 3 + 10) * FRAME_SAMPLES


def test_speech_that_goes_on_is_reported_every_partial_and_after_each_pause() -> None:
    config = EndpointConfig(partial_ms=320, pause_ms=160, end_silence_ms=640, post_roll_ms=0)
    endpointer = Endpointer(config)
    frame = tone(FRAME_S, amplitude=0.01)
    decisions = [False] * 5 + [True] * 25 + [False] * 6 + [True] * 12 + [False] * 25
    events = [endpointer.feed(frame, d, (i + 1) * FRAME_S) for i, d in enumerate(decisions)]
    kinds = [type(e).__name__ for e in events if e is not None]
    # Speech starts after the 3-frame onset; every 10 frames of it the utterance so far; the
    # pause resets the count; the silence after the last words ends the utterance.
    assert kinds == [
        "SpeechStarted",
        "Speaking",
        "Speaking",
        "Paused",
        "Speaking",
        "Paused",
        "Utterance",
    ], kinds
    reported = [e for e in events if isinstance(e, Speaking)]
    assert len(reported[1].audio) > len(reported[0].audio), "each holds the utterance so far"
    never = Endpointer(EndpointConfig(partial_ms=0))
    assert not any(isinstance(never.feed(frame, True, i * FRAME_S), Speaking) for i in range(99))


# --- the simulated device -------------------------------------------------------------------


def test_stop_playback_drops_the_queue_at_the_next_frame() -> None:
    device = SimulatedDevice(silence(1.0))
    frames = device.frames()
    device.play(tone(0.5))
    first = next(frames)
    assert first.speech_played == FRAME_SAMPLES and np.abs(first.played).max() > 0.2
    assert device.queued == 8000 - FRAME_SAMPLES
    assert device.stop_playback() == 8000 - FRAME_SAMPLES
    after = next(frames)
    assert after.speech_played == 0 and not after.played.any() and device.queued == 0


def test_stop_from_another_thread_takes_effect_within_a_frame() -> None:
    device = SimulatedDevice(silence(0.6), realtime=True)
    device.play(tone(2.0))
    stopped: list[float] = []

    def barge_in() -> None:
        device.stop_playback()
        stopped.append(time.monotonic())

    threading.Timer(0.2, barge_in).start()
    began = time.monotonic()
    frames = list(device.frames())
    (stopped_at,) = stopped
    assert all(f.speech_played == 0 for f in frames if f.at > stopped_at + FRAME_S)
    played_s = sum(f.speech_played for f in frames) / SAMPLE_RATE
    assert played_s <= stopped_at - began + 2 * FRAME_S


def test_recording_holds_what_was_played(tmp_path: Path) -> None:
    sink = tmp_path / "played.wav"
    device = SimulatedDevice(silence(0.2), record_to=sink)
    device.play(tone(0.5))
    played = np.concatenate([f.played for f in device.frames()])
    device.close()
    recorded = load_wav(sink)
    assert len(recorded) == len(played) >= 0.5 * SAMPLE_RATE
    assert np.abs(recorded - played).max() < 1e-3  # 16-bit rounding


def test_realtime_pacing_follows_the_wall_clock() -> None:
    device = SimulatedDevice(silence(1.0), realtime=True)
    began = time.monotonic()
    frames = list(device.frames())
    elapsed = time.monotonic() - began
    assert len(frames) == math.ceil(1.0 / FRAME_S)  # the last one padded
    assert 1.0 <= elapsed <= 1.3
    gaps = np.diff([f.at for f in frames])
    assert np.median(gaps) == pytest.approx(FRAME_S, abs=0.005)


def test_as_fast_as_possible_keeps_the_audio_clock() -> None:
    device = SimulatedDevice(silence(10.0))
    began = time.monotonic()
    frames = list(device.frames())
    assert time.monotonic() - began < 2.0
    assert frames[-1].at - frames[0].at == pytest.approx((len(frames) - 1) * FRAME_S)


def test_echo_path_puts_a_quieter_later_copy_into_the_mic() -> None:
    device = SimulatedDevice(echo=EchoPath(gain_db=-20.0, delay_ms=50.0))
    reply = tone(0.3)
    device.play(reply)
    frames = list(device.frames())  # the reply plays out over a silent microphone
    mic = np.concatenate([f.mic for f in frames])
    delay = 800  # 50 ms
    assert not mic[:delay].any()
    np.testing.assert_allclose(mic[delay : delay + len(reply)], 0.1 * reply, atol=1e-6)


def test_noise_floor_and_speaking_more_while_running() -> None:
    device = SimulatedDevice(silence(0.1), noise_dbfs=-60.0, until_closed=True)
    levels = []
    for index, frame in enumerate(device.frames()):
        levels.append(level_dbfs(frame.mic))
        if index == 5:
            device.speak(tone(0.2, amplitude=0.5))
        if index == 30:
            device.close()
    assert np.median(levels[:5]) == pytest.approx(-60.0, abs=1.0)
    assert max(levels) > -10.0  # the tone said after frame 5 was heard
    assert len(levels) == 31  # silence went on until close


def test_sound_device_pairs_the_speaker_block_with_the_microphone() -> None:
    device = SoundDevice()
    device.play(tone(0.1))
    indata = np.full((FRAME_SAMPLES, 1), 0.25, dtype=np.float32)
    outdata = np.zeros((FRAME_SAMPLES, 1), dtype=np.float32)
    status = SimpleNamespace(input_overflow=True, output_underflow=False)
    device._duplex_callback(indata, outdata, FRAME_SAMPLES, None, status)
    device.close()
    (frame,) = list(device.frames())
    assert np.array_equal(frame.played, outdata[:, 0]) and frame.speech_played == FRAME_SAMPLES
    assert np.all(frame.mic == 0.25) and device.overflows == 1 and device.underflows == 0


def test_no_microphone_is_one_readable_line() -> None:
    # A microphone no machine has, so the path runs with or without a sound card.
    with pytest.raises(AudioUnavailable) as caught:
        open_sound_device(input="no such microphone 7f3a")
    message = str(caught.value)
    assert message.startswith("no microphone")
    assert "continuing by text" in message and "\n" not in message


class _NoPortAudio(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, *args: object) -> None:
        if name == "sounddevice":
            raise OSError("PortAudio library not found")


def test_missing_portaudio_is_one_readable_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "sounddevice", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_NoPortAudio(), *sys.meta_path])
    with pytest.raises(AudioUnavailable, match="PortAudio is not installed") as caught:
        open_sound_device()
    assert "\n" not in str(caught.value) and "continuing by text" in str(caught.value)


# --- real speech through the VAD, the endpointer and Whisper --------------------------------


@pytest.mark.slow
def test_piper_into_the_microphone_comes_out_as_one_utterance_whisper_hears(
    fast_tts: PiperTTS, fast_stt: WhisperSTT, tmp_path: Path
) -> None:
    wav = tmp_path / "said.wav"
    fast_tts.speak(SENTENCE).write_wav(wav)
    (utterance,) = utterances(listen(SimulatedDevice(wav, trailing_silence_s=1.0)))
    assert not utterance.cut
    heard = fast_stt.transcribe(utterance.audio).text
    assert word_error_rate(SENTENCE, heard) <= 0.05, heard


@pytest.mark.slow
def test_one_second_of_silence_separates_two_utterances(
    fast_tts: PiperTTS, fast_stt: WhisperSTT
) -> None:
    audio = np.concatenate([spoken(fast_tts, SENTENCE), silence(1.0), spoken(fast_tts, SECOND)])
    found = utterances(listen(SimulatedDevice(audio, trailing_silence_s=1.0)))
    assert len(found) == 2
    heard = [fast_stt.transcribe(u.audio).text for u in found]
    assert word_error_rate(f"{SENTENCE} {SECOND}", " ".join(heard)) <= 0.05, heard


def test_a_minute_of_silence_is_no_utterance() -> None:
    assert listen(SimulatedDevice(silence(60.0), noise_dbfs=-70.0)) == []


@pytest.mark.parametrize(
    "noise",
    [
        pytest.param(lambda: RNG.normal(0, 10 ** (-45 / 20), 20 * SAMPLE_RATE), id="white-45dBFS"),
        pytest.param(lambda: pink_noise(20.0, -35.0), id="pink-35dBFS"),
    ],
)
def test_noise_alone_is_no_utterance(noise: object) -> None:
    assert callable(noise)
    assert utterances(listen(SimulatedDevice(noise().astype(np.float32)))) == []


@pytest.mark.slow
def test_clipped_speech_is_still_one_utterance_and_understood(
    clips: list[tuple[Path, str]], fast_stt: WhisperSTT
) -> None:
    wav, text = clips[0]  # tiny.en gets it word for word unclipped
    clipped = np.clip(load_wav(wav) * 20.0, -1.0, 1.0)
    (utterance,) = utterances(listen(SimulatedDevice(clipped, trailing_silence_s=1.0)))
    heard = fast_stt.transcribe(utterance.audio).text
    assert word_error_rate(text, heard) <= 0.1, heard


def test_speech_in_moderate_noise_is_one_utterance(clips: list[tuple[Path, str]]) -> None:
    speech = np.concatenate([silence(1.0), load_wav(clips[0][0]), silence(1.0)])
    noise = pink_noise(len(speech) / SAMPLE_RATE, level_dbfs(speech) - 10.0)  # 10 dB SNR or so
    found = utterances(listen(SimulatedDevice(speech + noise)))
    assert len(found) == 1


def test_a_ten_minute_monologue_is_cut_with_bounded_memory(
    clips: list[tuple[Path, str]],
) -> None:
    # One pass of the five clips, speech only, 250 ms apart: a reader who never stops long
    # enough to end the turn. The VAD runs on one pass; its decisions repeat for ten minutes.
    pieces = []
    for wav, _ in clips:
        start, end = speech_span(wav)
        pieces += [load_wav(wav)[round(start * SAMPLE_RATE) : round(end * SAMPLE_RATE)]]
        pieces += [silence(0.25)]
    one_pass = np.concatenate(pieces)
    vad = SileroVAD()
    frames = one_pass[: len(one_pass) // FRAME_SAMPLES * FRAME_SAMPLES].reshape(-1, FRAME_SAMPLES)
    decided = [(frame, vad.probability(frame) >= 0.5) for frame in frames]
    config = EndpointConfig(max_utterance_s=20.0)
    endpointer = Endpointer(config)
    total = round(600 / FRAME_S)
    found, most_buffered = [], 0
    for index in range(total):
        frame, speech = decided[index % len(decided)]
        event = endpointer.feed(frame, speech, (index + 1) * FRAME_S)
        most_buffered = max(most_buffered, endpointer.buffered_samples)
        if isinstance(event, Utterance):
            found.append(event)
    assert len(found) >= 600 / config.max_utterance_s * 0.9
    assert all(u.cut for u in found)
    assert all(len(u.audio) <= config.max_utterance_s * SAMPLE_RATE for u in found)
    assert most_buffered <= config.max_utterance_s * SAMPLE_RATE
    spoken_s = sum(len(u.audio) for u in found) / SAMPLE_RATE
    assert spoken_s >= 0.9 * (total - 1 / FRAME_S) * FRAME_S  # nothing lost between the cuts
