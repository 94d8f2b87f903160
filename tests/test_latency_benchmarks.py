"""The latency benchmarks' own arithmetic: where a clip's speech truly ends and where the
service's VAD (the real Silero suppressor) puts it, room noise at a chosen SNR, and failed
turns counted at their timeout."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.conversation import TurnResult
from benchmarks.conversation_rules import Case
from benchmarks.speech_data import card_clips, librivox_clips
from benchmarks.speech_timing import (
    Clip,
    prepare_clips,
    speech_end_s,
    vad_end_s,
    with_room_noise,
)
from benchmarks.typed_latency import summarise as typed_summary
from benchmarks.voice_latency import TURN_TIMEOUT_S, Turn
from benchmarks.voice_latency import summarise as voice_summary
from voice.audio import SAMPLE_RATE
from voice.device import load_wav

DATA = Path(__file__).parent / ".data"


def tone_then_silence(tone_s: float, silence_s: float, floor: float = 0.0) -> np.ndarray:
    rng = np.random.default_rng(1)
    times = np.arange(round(tone_s * SAMPLE_RATE)) / SAMPLE_RATE
    tone = 0.3 * np.sin(2 * np.pi * 220 * times)
    audio = np.concatenate([tone, np.zeros(round(silence_s * SAMPLE_RATE))])
    return (audio + floor * rng.normal(size=len(audio))).astype(np.float32)


def test_the_true_end_is_where_the_sound_stops_over_a_silent_or_hissing_floor() -> None:
    assert abs(speech_end_s(tone_then_silence(1.0, 0.5)) - 1.0) <= 0.01
    assert abs(speech_end_s(tone_then_silence(1.0, 0.5, floor=0.003)) - 1.0) <= 0.01
    # A click in the room tone after the last word is not speech.
    clicked = tone_then_silence(1.0, 0.5, floor=0.003)
    clicked[round(1.3 * SAMPLE_RATE) : round(1.3 * SAMPLE_RATE) + 80] = 0.3
    assert abs(speech_end_s(clicked) - 1.0) <= 0.01


def test_room_noise_is_mixed_at_the_asked_snr_and_runs_on_after_the_speech() -> None:
    clean = load_wav(card_clips(DATA)[0][0])
    noisy = with_room_noise(clean, 20.0, 2.0, np.random.default_rng(0))
    assert len(noisy) == len(clean) + 2 * SAMPLE_RATE
    noise = noisy[len(clean) :]
    end = round(speech_end_s(clean) * SAMPLE_RATE)
    speech = clean[:end]
    loud = speech[np.abs(speech) > 0.01]
    snr = 10 * np.log10(np.mean(loud**2) / np.mean(noise**2))
    # The SNR is against the speech windows' level, which the loud samples approximate.
    assert 15 < snr < 30, snr
    assert np.max(np.abs(noisy)) <= 0.99


def test_the_services_vad_ends_speech_a_little_after_its_true_end_clean_or_noisy() -> None:
    for path, _ in librivox_clips(DATA)[:2] + card_clips(DATA)[:2]:
        clean = load_wav(path)
        true_end = speech_end_s(clean)
        noisy = with_room_noise(clean, 20.0, 2.0, np.random.default_rng(0))
        for played in (clean, noisy):
            lag = vad_end_s(played) - true_end
            assert -0.2 <= lag <= 0.4, (path.name, lag)


def test_noisy_clips_are_written_and_timed_from_the_clean_speech(tmp_path: Path) -> None:
    files = card_clips(DATA)[:2]
    clean = prepare_clips(files, tmp_path, None)
    noisy = prepare_clips(files, tmp_path, 20.0)
    assert [clip.path for clip in clean] == [path for path, _ in files]
    for before, after in zip(clean, noisy, strict=True):
        assert after.path.parent == tmp_path and after.path.exists()
        assert after.speech_end_s == before.speech_end_s and after.text == before.text
        assert len(load_wav(after.path)) > len(load_wav(before.path))


def test_spoken_turns_run_from_the_true_end_and_a_failed_one_counts_at_its_timeout() -> None:
    clips = [Clip(Path(f"{n}.wav"), "hello there", 1.0, 1.1) for n in range(3)]
    turns = [
        Turn("hello there", "Hi!", {"first_audio_out": 900.0, "first_content_audio_out": 900.0}),
        Turn("hello there", "Hi!", {"first_audio_out": 1100.0, "first_content_audio_out": 1700.0}),
        Turn(),  # heard nothing
    ]
    figures = voice_summary("fast", turns, clips)
    assert figures["first_audio_out_ms"]["p50"] == 1200.0  # 1,100 + the VAD's 100 ms lag
    assert figures["first_audio_out_ms"]["max"] == TURN_TIMEOUT_S * 1000
    assert figures["first_content_audio_ms"]["p50"] == 1800.0
    assert figures["end_to_first_audio_ms"]["p50"] == 1000.0  # the old figure: answered only
    assert figures["answered"] == 2 and figures["utterances"] == 3
    assert figures["ratio_to_goal"] == 1.0


def test_typed_turns_keep_a_failed_one_at_its_timeout_and_give_each_stage() -> None:
    ok = TurnResult("typed", 1, Case.of({"say": "Hi."}), reply="Hello!", first_word_ms=800.0)
    ok.stages_ms = {"started": 1.0, "memories": 90.0, "first_word": 790.0}
    failed = TurnResult("typed", 2, Case.of({"say": "And?"}), first_word_ms=120_000.0)
    failed.error = "no reply in 120 s"
    figures = typed_summary("fast", [ok, failed])
    assert figures["first_word_ms"]["max"] == 120_000.0
    assert figures["stages_ms"]["memories"]["p50"] == 90.0
    assert figures["replied"] == 1 and figures["failed"] == 1


def test_the_window_length_benchmark_builds_windows_of_the_length_asked() -> None:
    from assistant.agent.context import MEMORIES_HEAD
    from assistant.llm.tokens import estimate_tokens
    from benchmarks.llm_server import prompt_tokens
    from benchmarks.window_length import conversation, table, turn_messages

    for tokens in (500, 2000):
        messages = conversation(tokens, estimate_tokens)
        size = prompt_tokens(estimate_tokens, messages)
        assert tokens <= size < tokens + 60, "about the length asked, no more than a turn over"
        assert (
            messages[0]["role"] == "system" and messages[-1]["content"] != messages[-3]["content"]
        )
    turns = [turn_messages(repeat) for repeat in range(3)]
    assert all(t[0]["content"].startswith(MEMORIES_HEAD) and t[1]["role"] == "user" for t in turns)
    assert len({t[1]["content"] for t in turns}) == 3, "a new message each repeat"
    figures = {"p50": 10.0, "p95": 12.0, "max": 13.0}
    report = {
        "profile": "fast",
        "repeats": 3,
        "lengths": {
            "500": {
                **{
                    f: figures
                    for f in ("first_piece_ms", "read_ms_per_token", "write_ms_per_token")
                },
                "appended_tokens": figures,
            },
        },
        "ratio_to_longest": {
            "500": {"first_piece_ms": 1.0, "read_ms_per_token": 1.0, "write_ms_per_token": 1.0}
        },
    }
    assert "| 500 | 10 | 10.0 / 12.0 / 13.0 (1.00)" in table(report)


def test_a_service_the_benchmark_launched_is_seen_to_exit() -> None:
    """A child that exited stays a zombie until reaped: seen as gone, not waited out."""
    import asyncio
    import subprocess
    import sys

    from benchmarks.conversation import exited, until_gone

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    assert asyncio.run(until_gone(child.pid, timeout_s=30.0))
    assert exited(child.pid)
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert not exited(alive.pid)
    finally:
        alive.kill()
        alive.wait()
