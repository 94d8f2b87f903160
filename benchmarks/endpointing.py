"""How long a silence should end the user's turn: false cuts against added latency.

    python -m benchmarks.endpointing [--json] [--profile fast]

Every case is one turn of real speech, with its true end of speech known, played through the
``SimulatedDevice`` (0.5 s of silence before, 2.5 s after, white noise at -70 dBFS throughout
as a quiet microphone's floor) into Silero VAD and the ``Endpointer``. The VAD runs once per
case; its decisions are replayed for each end-of-turn silence, with every other setting at
its default. Cases:

* ``librivox``: the five LibriVox recordings, one sentence or clause each, with the reader's
  natural pauses inside; the end is the aligner's (the clip's ``.lab``).
* ``passage``: consecutive LibriVox clips joined as recorded (one reader going on through a
  passage, 0880+0890 even one sentence), so the pause between them is the reader's own.
* ``piper-comma``: the profile's Piper voice on multi-clause sentences with commas, at normal
  and at slow speed (a slower speaker pauses longer); ``piper-two``: two-sentence turns as
  Piper renders them. The end is the last frame within 35 dB of the loudest.

Per end-of-turn silence: ``false_cut`` (the share of turns split into more than one
utterance), ``missed`` (turns with no utterance) and the latency from the true end of speech
to the utterance being emitted (the silence itself plus Silero's lag and frame rounding),
median and p95 over the turns. The recommended value is the smallest with at most 5 % false
cuts in every kind of turn. Also printed: the longest pause inside each turn, as the VAD saw
it.

Then the same turns with the turn judge (smart-turn v3, turn_end.py) asked after each pause of
``pause_ms``, for several pauses and end-of-turn silences (the fallback when the judge says the
speaker goes on): a pause judged finished ends the turn at the first frame after the judgement
is in (the judgement runs beside the frames, as in the voice loop, so its own time, measured,
is part of the latency). The recommended setting has the lowest mean wait among those that cut
no kind of turn more often, and miss none more often, than the silence alone at its default.

``--json`` prints ``{"cases": {kind: turns}, "longest_pause_ms": [...], "rows": [one Row
each], "recommended_ms": N, "judged_rows": [one Row each, with "pause_ms" and
"judge_p50_ms"], "recommended_judged": Row or null}``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.speech_data import DEFAULT_ROOT, librivox_clips
from voice.audio import FRAME_S, FRAME_SAMPLES, SAMPLE_RATE, Frame, level_dbfs
from voice.device import SimulatedDevice, load_wav
from voice.endpoint import (
    SPEECH_THRESHOLD,
    EndpointConfig,
    Endpointer,
    EndpointEvent,
    Paused,
    Utterance,
)
from voice.turn_end import COMPLETE_AT, SmartTurn, TurnJudge
from voice.vad import SileroVAD

END_SILENCES_MS = (300, 400, 500, 600, 700, 800, 1000)
# With the turn judge: the pause before it is asked, and the silence that ends a turn anyway.
JUDGE_PAUSES_MS = (150, 200, 300)
JUDGE_END_SILENCES_MS = (600, 800, 1000)
MAX_FALSE_CUTS = 0.05
LEAD_S = 0.5
TAIL_S = 2.5
NOISE_DBFS = -70.0
COMMA_SENTENCES = (
    "When I get home tonight, after the gym, remind me to water the plants.",
    "Add eggs, flour, butter, and a bag of sugar to the shopping list.",
    "If it rains tomorrow, cancel the picnic, and tell Maria we will meet on Sunday.",
    "My sister, who lives in Porto, is visiting next month, so keep the weekend free.",
    "Before the meeting, check my calendar, find a free hour, and book the small room.",
    "Actually, on second thought, make that a reminder for Friday morning instead.",
)
TWO_SENTENCES = (
    "I have a dentist appointment next Tuesday. Remind me the day before.",
    "The printer is out of paper again. Please order a new box.",
    "I finished the report. Send it to Priya when she is back.",
)
SLOW_SPEED = 0.8


@dataclass(frozen=True)
class Case:
    kind: str
    audio: Frame
    speech_end_s: float
    """Seconds into ``audio`` where the speech truly ends."""


@dataclass(frozen=True)
class Decided:
    """A case after the VAD: its frames, speech decisions and true end on the stream clock."""

    kind: str
    frames: list[tuple[Frame, bool, float]]
    speech_end: float

    @property
    def longest_pause_ms(self) -> float:
        """The longest run of non-speech frames inside the turn, as the VAD saw it."""
        marks = "".join("s" if speech else "." for _, speech, _ in self.frames).strip(".")
        return max((len(run) for run in marks.split("s")), default=0) * FRAME_S * 1000


def librivox_cases(root: Path) -> list[Case]:
    clips = [(load_wav(wav), speech_span(wav)[1]) for wav, _ in librivox_clips(root)]
    cases = [Case("librivox", audio, end) for audio, end in clips]
    for (first, _), (second, end) in itertools.pairwise(clips):
        cases.append(
            Case("passage", np.concatenate([first, second]), len(first) / SAMPLE_RATE + end)
        )
    return cases


def speech_span(wav: Path) -> tuple[float, float]:
    """The aligner's start and end of speech in a LibriVox clip, in seconds (its ``.lab``)."""
    rows = [line.split() for line in wav.with_suffix(".lab").read_text().splitlines()]
    start = min(float(row[0]) for row in rows if row[-1] == "speech")
    return start, max(float(row[0]) for row in rows if row[-1] == "silence")


def piper_cases(profile: str) -> list[Case]:
    from assistant.config import load_config
    from assistant.model_paths import ProfileModels
    from voice.tts import PiperTTS

    paths = ProfileModels(load_config(flags={"profile": profile}).settings).tts()
    cases = []
    for speed in (1.0, SLOW_SPEED):
        tts = PiperTTS(paths.model, paths.config, speed=speed)
        for kind, texts in (("piper-comma", COMMA_SENTENCES), ("piper-two", TWO_SENTENCES)):
            for text in texts:
                audio = tts.speak(text).as_float(SAMPLE_RATE)
                cases.append(Case(kind, audio, _loud_end(audio)))
    return cases


def _loud_end(audio: Frame) -> float:
    levels = [level_dbfs(audio[i : i + FRAME_SAMPLES]) for i in range(0, len(audio), FRAME_SAMPLES)]
    floor = max(levels) - 35.0
    last = max(i for i, level in enumerate(levels) if level > floor)
    return min(len(audio), (last + 1) * FRAME_SAMPLES) / SAMPLE_RATE


def decide(case: Case, seed: int) -> Decided:
    lead = np.zeros(round(LEAD_S * SAMPLE_RATE), dtype=np.float32)
    device = SimulatedDevice(
        np.concatenate([lead, case.audio]),
        trailing_silence_s=TAIL_S,
        noise_dbfs=NOISE_DBFS,
        seed=seed,
    )
    vad = SileroVAD()
    frames = []
    origin: float | None = None
    for frame in device.frames():
        origin = frame.at - FRAME_S if origin is None else origin
        speech = vad.probability(frame.mic) >= SPEECH_THRESHOLD
        frames.append((frame.mic, speech, frame.at - origin))
    return Decided(case.kind, frames, LEAD_S + case.speech_end_s)


def utterances(
    decided: Decided, config: EndpointConfig, judge: TurnJudge | None = None
) -> tuple[list[Utterance], list[float]]:
    """The utterances the endpointer emits, and how long each judgement took. As in the
    voice loop, a pause is judged while frames go on: a pause judged finished ends the
    utterance at the first frame after the judgement is in, if no speech came meanwhile."""
    endpointer = Endpointer(config)
    found: list[Utterance] = []
    took: list[float] = []
    pending: list[tuple[float, int]] = []  # (when the verdict is in, pause number)
    for frame in decided.frames:
        at = frame[2]
        events: list[EndpointEvent | None] = [endpointer.feed(*frame)]
        while pending and pending[0][0] <= at:
            events.append(endpointer.finish(pending.pop(0)[1], at))
        for event in events:
            if isinstance(event, Utterance):
                found.append(event)
            elif isinstance(event, Paused) and judge is not None:
                started = time.perf_counter()
                finished = judge.finished(event.audio) >= COMPLETE_AT
                took.append(time.perf_counter() - started)
                if finished:
                    pending.append((event.at + took[-1], event.number))
    return found, took


@dataclass(frozen=True)
class Row:
    end_silence_ms: int
    false_cut: float
    missed: float
    false_cut_by_kind: dict[str, float]
    latency_p50_ms: float
    latency_p95_ms: float
    latency_mean_ms: float
    vad_lag_p50_ms: float
    """From the true end of speech to the end of the last frame the VAD still called speech."""
    pause_ms: int | None = None
    """The pause after which the turn judge was asked; None: the silence alone decides."""
    judge_p50_ms: float | None = None
    """How long one judgement took (it is part of the latency)."""


def measure(
    decided: Sequence[Decided],
    end_silence_ms: int,
    judge: TurnJudge | None = None,
    pause_ms: int | None = None,
) -> Row:
    config = replace(EndpointConfig(), end_silence_ms=end_silence_ms)
    if judge is not None and pause_ms is not None:
        config = replace(config, pause_ms=pause_ms)
    else:
        judge = None
    counts: dict[str, list[int]] = {}
    latencies, lags, judged = [], [], []
    for case in decided:
        found, took = utterances(case, config, judge)
        judged += took
        counts.setdefault(case.kind, []).append(len(found))
        if found:
            latencies.append((found[-1].emitted_at - case.speech_end) * 1000)
            lags.append((found[-1].ended_at - case.speech_end) * 1000)
    everything = [count for kind_counts in counts.values() for count in kind_counts]
    return Row(
        end_silence_ms=end_silence_ms,
        false_cut=_share(everything, lambda n: n > 1),
        missed=_share(everything, lambda n: n == 0),
        false_cut_by_kind={kind: _share(c, lambda n: n > 1) for kind, c in counts.items()},
        latency_p50_ms=_percentile(latencies, 50),
        latency_p95_ms=_percentile(latencies, 95),
        latency_mean_ms=float(np.mean(latencies)) if latencies else float("nan"),
        vad_lag_p50_ms=_percentile(lags, 50),
        pause_ms=pause_ms if judge is not None else None,
        judge_p50_ms=_percentile(judged, 50) * 1000 if judge is not None else None,
    )


def _share(counts: Sequence[int], test: Callable[[int], bool]) -> float:
    return sum(1 for count in counts if test(count)) / len(counts)


def _percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def recommend(rows: Sequence[Row]) -> int | None:
    """Held to every kind of turn, not the pooled share, which would hang on the mix of kinds."""
    return next(
        (
            row.end_silence_ms
            for row in rows
            if max(row.false_cut_by_kind.values()) <= MAX_FALSE_CUTS
        ),
        None,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--profile", default="fast", help="whose Piper voice speaks (fast)")
    parser.add_argument("--data", type=Path, default=DEFAULT_ROOT, help="LibriVox data root")
    args = parser.parse_args(argv)

    cases = librivox_cases(args.data) + piper_cases(args.profile)
    print(f"{len(cases)} turns through Silero VAD", file=sys.stderr)
    decided = [decide(case, seed) for seed, case in enumerate(cases)]
    rows = [measure(decided, end_silence) for end_silence in END_SILENCES_MS]
    kinds = dict(Counter(case.kind for case in cases))
    chosen = recommend(rows)
    judge = turn_judge(args.profile)
    judged = [
        measure(decided, end_silence, judge, pause)
        for pause in JUDGE_PAUSES_MS
        for end_silence in JUDGE_END_SILENCES_MS
    ]
    baseline = next(row for row in rows if row.end_silence_ms == EndpointConfig().end_silence_ms)
    best = recommend_judged(judged, baseline)
    if args.json:
        rows_json = [asdict(row) for row in rows]
        pauses_json = [case.longest_pause_ms for case in decided]
        report: dict[str, Any] = {
            "cases": kinds,
            "longest_pause_ms": pauses_json,
            "rows": rows_json,
            "recommended_ms": chosen,
            "judged_rows": [asdict(row) for row in judged],
            "recommended_judged": asdict(best) if best is not None else None,
        }
        print(json.dumps(report, indent=2))
        return 0
    print("turns: " + ", ".join(f"{kind} {count}" for kind, count in kinds.items()))
    pauses = [case.longest_pause_ms for case in decided]
    print(
        f"longest pause inside a turn (VAD): median {_percentile(pauses, 50):.0f} ms,"
        f" p95 {_percentile(pauses, 95):.0f} ms, max {max(pauses):.0f} ms"
    )
    print("end silence  false cuts  missed  latency p50   p95  VAD lag  false cuts by kind")
    for row in rows:
        print(
            f"{row.end_silence_ms:>8} ms  {_cuts_and_waits(row)}"
            f"  {row.vad_lag_p50_ms:>4.0f} ms  {_by_kind(row)}"
        )
    print(
        f"recommended: {chosen} ms, the smallest with at most {MAX_FALSE_CUTS:.0%} false cuts"
        " in every kind of turn"
    )
    print("\nwith the turn judge (smart-turn) asked after a pause, the silence as the fallback:")
    print("pause  end silence  false cuts  missed  latency p50   p95  mean  judge  by kind")
    for row in judged:
        print(
            f"{row.pause_ms:>3} ms  {row.end_silence_ms:>8} ms  {_cuts_and_waits(row)}"
            f"  {row.latency_mean_ms:>4.0f}  {row.judge_p50_ms or 0:>3.0f} ms  {_by_kind(row)}"
        )
    if best is None:
        print("recommended: none cuts no more turns of each kind than the silence alone")
    else:
        print(
            f"recommended: pause {best.pause_ms} ms, end silence {best.end_silence_ms} ms: the "
            f"lowest mean wait ({best.latency_mean_ms:.0f} ms against "
            f"{baseline.latency_mean_ms:.0f} ms) with no more false cuts of any kind than "
            f"{baseline.end_silence_ms} ms of silence alone"
        )
    return 0


def _cuts_and_waits(row: Row) -> str:
    return (
        f"{row.false_cut:>10.0%}  {row.missed:>6.0%}  {row.latency_p50_ms:>8.0f} ms"
        f"  {row.latency_p95_ms:>4.0f}"
    )


def _by_kind(row: Row) -> str:
    return ", ".join(f"{kind} {share:.0%}" for kind, share in row.false_cut_by_kind.items())


def turn_judge(profile: str) -> TurnJudge:
    from assistant.config import load_config
    from assistant.model_paths import ProfileModels

    return SmartTurn(ProfileModels(load_config(flags={"profile": profile}).settings).turn())


def recommend_judged(rows: Sequence[Row], baseline: Row) -> Row | None:
    """The lowest mean wait among the settings that cut no kind of turn more often than the
    silence alone does."""
    fair = [
        row
        for row in rows
        if all(
            share <= baseline.false_cut_by_kind[kind]
            for kind, share in row.false_cut_by_kind.items()
        )
        and row.missed <= baseline.missed
    ]
    return min(fair, key=lambda row: row.latency_mean_ms, default=None)


if __name__ == "__main__":
    raise SystemExit(main())
