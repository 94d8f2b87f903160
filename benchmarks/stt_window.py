"""Whisper's encoder window fitted to each utterance against the full 30 s window: how long a
transcription takes and how well it hears, on the same recordings in the same run.

    python -m benchmarks.stt_window [--profiles fast quality] [--repeats 3] [--json]

Per profile (the profile's Whisper, int8, greedy, 2 threads, the app's name prompt), every clip
is transcribed by both paths (``stt.window = full`` and ``fitted``): the five LibriVox
recordings and the five playing cards of the pocketsphinx sdist (real speech, 1-7 s), the
voice-latency benchmark's Piper-spoken questions (1-3 s), and a 42 s monologue (the LibriVox
recordings twice, one after the other; the fitted path hands anything over 25 s to the full
one). Each clip's time is the median of ``--repeats`` runs after one warm-up.

``transcribe_ms`` is p50/p95/max over the clips; ``wer`` all word errors over all words;
``ratio_p50`` the fitted median over the full median; ``fell_back`` how many clips the fitted
path's guards handed to the full window (``window_s`` 30).

``--json`` prints ``{"<profile>": {"full": {"transcribe_ms": {"p50", "p95", "max"}, "wer"},
"fitted": {"transcribe_ms": {...}, "wer", "fell_back"}, "ratio_p50", "clips"}}``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from benchmarks.speech_data import DEFAULT_ROOT, card_clips, librivox_clips
from benchmarks.stats import percentiles
from benchmarks.voice_latency import QUESTIONS, heard_wer
from voice.device import load_wav
from voice.stt import Transcript, WhisperSTT

PROMPT = "Names: Joana, Lisbon."  # what VoiceLoop passes: the user's own names
MONOLOGUE_COPIES = 2

Clip = tuple[NDArray[np.float32], str]


def clips() -> list[Clip]:
    from assistant.config import load_config
    from assistant.model_paths import ProfileModels
    from assistant.parts import load_tts

    recorded = [(load_wav(p), text) for p, text in librivox_clips(DEFAULT_ROOT)]
    recorded += [(load_wav(p), text) for p, text in card_clips(DEFAULT_ROOT)]
    settings = load_config(flags={"profile": "fast"}, environ={}).settings
    tts = load_tts(settings, ProfileModels(settings).tts())
    spoken = [(tts.speak(q).as_float(16_000), q) for q in QUESTIONS]
    librivox = recorded[:5]
    monologue = (
        np.concatenate([audio for audio, _ in librivox] * MONOLOGUE_COPIES),
        " ".join([text for _, text in librivox] * MONOLOGUE_COPIES),
    )
    return recorded + spoken + [monologue]


def recogniser(profile: str, window: str) -> WhisperSTT:
    from assistant.config import load_config
    from assistant.model_paths import ProfileModels
    from assistant.parts import load_stt

    settings = load_config(flags={"profile": profile, "stt.window": window}, environ={}).settings
    return load_stt(settings, ProfileModels(settings).stt())


def run_path(stt: WhisperSTT, clips: Sequence[Clip], repeats: int) -> dict[str, Any]:
    times: list[float] = []
    heard: list[Transcript] = []
    stt.transcribe(clips[0][0], PROMPT)
    for audio, _ in clips:
        runs = []
        for _ in range(repeats):
            started = time.perf_counter()
            transcript = stt.transcribe(audio, PROMPT)
            runs.append((time.perf_counter() - started) * 1000.0)
        times.append(statistics.median(runs))
        heard.append(transcript)
    return {
        "transcribe_ms": percentiles(times),
        "wer": heard_wer([text for _, text in clips], [t.text for t in heard]),
        "fell_back": sum(1 for t in heard if t.window_s >= 30.0),
        "heard": [t.text for t in heard],
    }


def measure(profile: str, repeats: int, clips: Sequence[Clip]) -> dict[str, Any]:
    full = run_path(recogniser(profile, "full"), clips, repeats)
    fitted = run_path(recogniser(profile, "fitted"), clips, repeats)
    for (audio, text), slow, fast in zip(clips, full["heard"], fitted["heard"], strict=True):
        if slow != fast:
            print(f"{profile} {len(audio) / 16_000:.1f} s {text!r}", file=sys.stderr)
            print(f"    full:   {slow!r}\n    fitted: {fast!r}", file=sys.stderr)
    del full["fell_back"], full["heard"], fitted["heard"]
    ratio = fitted["transcribe_ms"]["p50"] / full["transcribe_ms"]["p50"]
    return {"full": full, "fitted": fitted, "ratio_p50": round(ratio, 3), "clips": len(clips)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profiles", nargs="+", default=["fast", "quality"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    every_clip = clips()
    results = {profile: measure(profile, args.repeats, every_clip) for profile in args.profiles}
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print("| profile | window | transcribe ms p50 / p95 / max | WER | fell back | ratio p50 |")
    for profile, figures in results.items():
        for window in ("full", "fitted"):
            path = figures[window]
            ms = path["transcribe_ms"]
            back = f"{path['fell_back']}/{figures['clips']}" if window == "fitted" else ""
            ratio = f"{figures['ratio_p50']:.2f}" if window == "fitted" else "1"
            print(
                f"| {profile} | {window} | {ms['p50']:.0f} / {ms['p95']:.0f} / {ms['max']:.0f} "
                f"| {path['wer']:.3f} | {back} | {ratio} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
