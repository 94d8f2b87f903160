"""How much of a transcription is Whisper's encoder, whose cost does not depend on how long the
utterance is: the measurement behind transcribing once, at the end of an utterance, rather than
while the user is still speaking (docs/VOICE.md).

    python -m benchmarks.stt_encoder [--profiles fast quality] [--repeats 5] [--json]

Per profile (int8, greedy, 2 threads): the first 1, 2, 4 and 8 s of a LibriVox recording
transcribed whole (``transcribe_ms``), and the encoder alone on the same padded 30 s window
(``encoder_ms``); medians of ``--repeats`` runs after one warm-up. ``encoder_share`` is the
encoder's median over the transcription's median.

``--json`` prints ``{"<profile>": {"encoder_ms": {"p50", "p95"}, "<seconds>s": {"transcribe_ms":
{"p50", "p95"}, "encoder_share"}}}``; otherwise a table.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from benchmarks.speech_data import DEFAULT_ROOT, librivox_clips
from benchmarks.stats import percentiles

LENGTHS_S = (1, 2, 4, 8)


def timed(run: Callable[[], object], repeats: int) -> list[float]:
    run()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000.0)
    return times


def measure(profile: str, repeats: int) -> dict[str, Any]:
    from assistant.config import load_config
    from assistant.model_paths import ProfileModels
    from assistant.parts import load_stt
    from voice.audio import SAMPLE_RATE
    from voice.device import load_wav

    settings = load_config(flags={"profile": profile}, environ={}).settings
    stt = load_stt(settings, ProfileModels(settings).stt())
    model = stt._model  # faster-whisper's WhisperModel: its encoder is reached directly
    audio = load_wav(librivox_clips(DEFAULT_ROOT)[1][0])
    window = model.feature_extractor.nb_max_frames
    features = model.feature_extractor(audio[: 2 * SAMPLE_RATE])
    padded = np.pad(features, ((0, 0), (0, window - features.shape[1])))
    encoder = percentiles(timed(lambda: model.encode(padded), repeats))
    figures: dict[str, Any] = {"encoder_ms": encoder}
    for seconds in LENGTHS_S:
        clip = audio[: seconds * SAMPLE_RATE]
        whole = percentiles(timed(partial(stt.transcribe, clip), repeats))
        figures[f"{seconds}s"] = {
            "transcribe_ms": whole,
            "encoder_share": round(encoder["p50"] / whole["p50"], 2),
        }
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profiles", nargs="+", default=["fast", "quality"])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = {profile: measure(profile, args.repeats) for profile in args.profiles}
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(
        "| profile | encoder alone ms | "
        + " | ".join(f"{s} s: whole ms (encoder share)" for s in LENGTHS_S)
        + " |"
    )
    for profile, figures in results.items():
        rows = [figures[f"{s}s"] for s in LENGTHS_S]
        cells = [f"{r['transcribe_ms']['p50']:.0f} ({r['encoder_share']:.0%})" for r in rows]
        print(f"| {profile} | {figures['encoder_ms']['p50']:.0f} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
