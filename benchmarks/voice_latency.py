"""How long a spoken turn takes, from the end of the user's speech to the first sound of the
reply, through the whole product: `brain serve` with headless voice and the profile's real
local model. Then, on the voice loop, whether the reply's own echo interrupts it and how soon
a real person cutting in stops it.

    python -m benchmarks.voice_latency [--profiles fast quality] [--utterances 20] [--json]

Latency, per profile: a fresh data folder, `brain serve` started the way the app starts it
(``audio.input_device = none``: its microphone is silence at real-time pace, and ``Listen``
plays a file into it); the first utterance is played once the service says its model is ready
and its microphone listening (before 2026-11-26, c5170e9, the first turn included the model's
start). Each utterance is a WAV: the five LibriVox recordings from the
pocketsphinx sdist, 15 Piper-spoken questions, the sdist's five recorded playing cards and five
more questions (30 at most; the first 20 are those of every earlier run), each followed by the
silence of the simulated
microphone (real trailing silence, paced in real time). The service reports the stage times of
every spoken turn (``VoiceTimings``): ``turn_decided`` (the end-of-turn silence, or a pause
judged final), ``stt_done`` (the transcript: made then, or at the pause it ended at),
``memories`` (retrieved for the turn), ``prompt_sent`` (the LLM asked), ``first_token`` (the
reply's first text from the LLM), ``first_word`` (its first letter or digit),
``first_audio_synthesized`` (Piper's first chunk), ``first_audio_out`` (the first frame of it
going to the speaker); all in ms after
the end of the user's speech (the last frame the VAD took for speech). The next utterance is
spoken once the reply has played out. ``ratio_to_goal`` is the end-to-first-audio p50 over the
goal (the voice issue's: fast 1.0 s, quality 1.8 s).

Echo and barge-in, on the voice loop (``VoiceLoop`` on a simulated duplex device, real time,
the replies' echo at -10 dB and 40 ms, white noise at -55 dBFS, the real Silero VAD, Whisper
and Piper): ``self_trigger_rate`` is the share of replies (the latency run's own replies) that
stop themselves with no one speaking; ``barge_in_stop_ms`` is, for a LibriVox speaker cutting
into a reply, the time from the first frame of their speech (Silero on the clean recording) to
the first frame the speaker went silent (32 ms frames). The loop does not depend on the LLM, so
this part runs once with the first profile's voice and recogniser.

``heard_wer`` is the word error rate of what the service heard against the text of every
utterance played (all errors over all words); ``heard_wer_whole_utterance`` the same files
transcribed whole by the profile's recogniser in Whisper's full 30 s window outside the
service, in the same run (the path every utterance took before transcripts were made at pauses
in a fitted window).

``--json`` prints ``{"<profile>": {"end_to_first_audio_ms": {"p50", "p95"}, "stages_ms":
{stage: {"p50", "p95"}}, "barge_in_stop_ms": {"p50", "p95"}, "self_trigger_rate",
"ratio_to_goal", "heard_wer", "heard_wer_whole_utterance", "utterances", "answered"}}``.
Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.replies import repeated_share
from benchmarks.speech_data import DEFAULT_ROOT, card_clips, librivox_clips
from benchmarks.stats import percentiles
from voice.device import load_wav
from voice.timing import STAGES
from voice.wer import normalize, word_error_rate

GOALS_MS = {"fast": 1000.0, "quality": 1800.0}
QUESTIONS = (
    "What time is it in Tokyo right now?",
    "Remind me to water the plants this evening.",
    "My sister Beatrix lives in Porto.",
    "What did I tell you about my sister?",
    "Can you suggest a quick vegetarian dinner?",
    "I prefer tea over coffee.",
    "How many days are there until Friday?",
    "Add eggs and bread to my shopping list.",
    "What is a good way to learn Portuguese?",
    "Tell me a short joke.",
    "I have a dentist appointment next Tuesday at three.",
    "What do you know about me so far?",
    "Is it going to rain tomorrow?",
    "Set a timer for ten minutes.",
    "Thanks, that is all for now.",
    "Move my call with Joana to Thursday morning.",
    "How long does it take to boil an egg?",
    "Remind me to buy a birthday present for Luis.",
    "What was the last thing I asked you?",
    "Turn the volume down a little, please.",
)

TURN_TIMEOUT_S = 300.0
ECHO_GAIN_DB = -10.0
ECHO_DELAY_MS = 40.0
NOISE_DBFS = -55.0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class Turn:
    heard: str = ""
    reply: str = ""
    stages_ms: dict[str, float] = field(default_factory=dict)


def utterance_files(folder: Path, count: int) -> list[tuple[Path, str]]:
    """The LibriVox clips, Piper-spoken questions and the recorded playing cards, ``count`` in
    all (at most 30), each with its text."""
    from assistant.config import load_config
    from assistant.model_paths import ProfileModels
    from assistant.parts import load_tts

    settings = load_config(flags={"profile": "fast"}, environ={}).settings
    tts = load_tts(settings, ProfileModels(settings).tts())
    spoken = []
    for index, question in enumerate(QUESTIONS):
        path = folder / f"question{index:02d}.wav"
        tts.speak(question).write_wav(path)
        spoken.append((path, question))
    # The first 20 as in every earlier run; then the recorded cards, then more questions.
    files = librivox_clips(DEFAULT_ROOT) + spoken[:15] + card_clips(DEFAULT_ROOT) + spoken[15:]
    return files[:count]


def heard_wer(references: Sequence[str], heard: Sequence[str]) -> float:
    """Word error rate over all the utterances (their errors over their words)."""
    words = [len(normalize(reference)) for reference in references]
    errors = sum(
        word_error_rate(reference, text) * count
        for reference, text, count in zip(references, heard, words, strict=True)
    )
    return round(errors / max(1, sum(words)), 4)


def direct_wer(profile: str, files: Sequence[tuple[Path, str]]) -> float:
    """The same files transcribed whole by the profile's recogniser in Whisper's full 30 s
    window, outside the service: the path every utterance took before transcripts were made
    at pauses in a fitted window."""
    from assistant.config import load_config
    from assistant.model_paths import ProfileModels
    from assistant.parts import load_stt

    flags = {"profile": profile, "stt.window": "full"}
    settings = load_config(flags=flags, environ={}).settings
    stt = load_stt(settings, ProfileModels(settings).stt())
    heard = [stt.transcribe(load_wav(path)).text for path, _ in files]
    return heard_wer([text for _, text in files], heard)


async def run_turns(
    profile: str, files: Sequence[Path], root: Path, logs: Path | None = None
) -> list[Turn]:
    """Each file spoken to a fresh ``brain serve``, timed; ``logs``: where to copy what the
    service logged meanwhile."""
    from assistant.clients.connection import ServiceClient
    from assistant.config import load_config
    from assistant.protocol.conversation import ReplyEnd, Stop, UserSaid
    from assistant.protocol.voice import HeardNothing, Listen, Voice, VoiceTimings

    root.mkdir(parents=True, exist_ok=True)
    config_file = root / "config.toml"
    config_file.write_text("", encoding="utf-8")
    flags = {
        "profile": profile,
        "data_dir": str(root / "data"),
        "audio.input_device": "none",
        "voice.enabled": "true",
        "service.runtime_dir": str(root / "run"),
    }
    loaded = load_config(flags=flags, environ={}, config_file=config_file)
    service_log = loaded.settings.log_dir / "service.log"
    logged_before = service_log.stat().st_size if service_log.exists() else 0
    client = await ServiceClient.connect(loaded, "voice-benchmark")
    turns: list[Turn] = []
    try:
        await until_ready(client)
        for index, path in enumerate(files, 1):
            await client.send(Listen(path=str(path)))
            turn, number, ended = Turn(), None, False
            deadline = time.monotonic() + TURN_TIMEOUT_S
            async for update in client.updates():
                if time.monotonic() > deadline:
                    log(f"  {path.name}: timed out")
                    break
                if isinstance(update, UserSaid) and update.client == "voice" and number is None:
                    number, turn.heard = update.turn, update.text
                elif isinstance(update, HeardNothing) and number is None:
                    log(f"  {path.name}: not heard ({update.reason})")
                    break
                elif isinstance(update, VoiceTimings) and update.turn == number:
                    turn.stages_ms = dict(update.stages_ms)
                elif isinstance(update, ReplyEnd) and update.turn == number:
                    turn.reply, ended = update.text, True
                elif isinstance(update, Voice) and ended and update.state == "listening":
                    break  # the reply has played out
            turns.append(turn)
            shown = turn.stages_ms.get("first_audio_out")
            log(
                f"  {profile} {index}/{len(files)}: first audio "
                f"{'-' if shown is None else f'{shown:,.0f} ms'} | heard {turn.heard[:50]!r}"
            )
            stages = " ".join(
                f"{stage} {turn.stages_ms[stage]:,.0f}"
                for stage in STAGES
                if stage in turn.stages_ms
            )
            log(f"      {stages} | said {turn.reply[:60]!r}")
        await client.send(Stop())
    finally:
        await client.leave()
    if logs is not None:
        logs.parent.mkdir(parents=True, exist_ok=True)
        with service_log.open("rb") as logged:
            logged.seek(logged_before)
            logs.write_bytes(logged.read())
    return turns


async def until_ready(client: Any) -> None:
    """Until the model is loaded and the microphone listens, as a user waits for the app to
    say so before speaking (else the first turn times the model's start)."""
    from assistant.protocol.conversation import Status
    from assistant.protocol.voice import Voice

    model = client.welcome.state == "ready"
    listening = client.welcome.voice.state == "listening"
    if model and listening:
        return
    async for update in client.updates():
        if isinstance(update, Status):
            model = update.state == "ready"
        elif isinstance(update, Voice):
            listening = update.state == "listening"
        if model and listening:
            return


def echo_and_barge_in(profile: str, replies: Sequence[str]) -> dict[str, Any]:
    """Self-triggering and barge-in stop time on the voice loop, in real time."""
    from assistant.config import load_config
    from assistant.model_paths import ProfileModels
    from assistant.parts import load_stt, load_tts
    from benchmarks.echo_suppression import speech_onset
    from voice.audio import FRAME_S, FRAME_SAMPLES, SAMPLE_RATE
    from voice.device import EchoPath, SimulatedDevice
    from voice.loop import BargedIn, VoiceEvent, VoiceLoop
    from voice.vad import SileroVAD

    settings = load_config(flags={"profile": profile}, environ={}).settings
    models = ProfileModels(settings)
    stt, tts = load_stt(settings, models.stt()), load_tts(settings, models.tts())
    users = [load_wav(path) for path, _ in librivox_clips(DEFAULT_ROOT)]
    barge_ins: list[BargedIn] = []
    lock = threading.Lock()

    def on_event(event: VoiceEvent) -> None:
        if isinstance(event, BargedIn):
            with lock:
                barge_ins.append(event)

    device = SimulatedDevice(
        realtime=True,
        until_closed=True,
        echo=EchoPath(gain_db=ECHO_GAIN_DB, delay_ms=ECHO_DELAY_MS),
        noise_dbfs=NOISE_DBFS,
    )
    loop = VoiceLoop(device, stt, tts, SileroVAD(), on_event)
    loop.start()
    rng = np.random.default_rng(7)
    texts = [text for text in replies if text.strip()] or list(QUESTIONS)
    triggered, stops = 0, []
    try:
        for index, text in enumerate(texts):
            before = len(barge_ins)
            speech = loop.speak()
            speech.feed(text)
            speech.finish()
            while not speech.done:
                time.sleep(0.05)
            stopped_itself = len(barge_ins) > before
            triggered += stopped_itself
            log(f"  echo {index + 1}/{len(texts)}: {'self-triggered' if stopped_itself else 'ok'}")
        for index, text in enumerate(texts):
            user = users[index % len(users)]
            frames = len(user) // FRAME_SAMPLES
            onset = speech_onset(user.astype(np.float64), 0, frames, SileroVAD())
            onset_s = (onset or 0) * FRAME_S
            before = len(barge_ins)
            speech = loop.speak()
            speech.feed(text + " " + text)
            speech.finish()
            while device.queued == 0 and not speech.done:  # until its first audio is out
                time.sleep(0.01)
            time.sleep(float(rng.uniform(0.8, 2.0)))
            spoken_at = time.monotonic()
            device.speak(user)
            while len(barge_ins) == before and time.monotonic() < spoken_at + 10:
                time.sleep(0.01)
            if len(barge_ins) > before:
                # Playback is silent from the frame after the one that decided.
                stopped_at = barge_ins[-1].at + FRAME_S
                stops.append((stopped_at - (spoken_at + onset_s)) * 1000.0)
            loop.stop_speaking()
            time.sleep(len(user) / SAMPLE_RATE + 1.0)  # let the user finish and be heard
            log(f"  barge-in {index + 1}/{len(texts)}: {stops[-1] if stops else '-'}")
    finally:
        loop.close()
    return {
        "self_trigger_rate": round(triggered / len(texts), 3),
        "barge_in_stop_ms": percentiles(stops),
        "barge_ins_detected": f"{len(stops)}/{len(texts)}",
    }


def summarise(profile: str, turns: Sequence[Turn], references: Sequence[str]) -> dict[str, Any]:
    answered = [t for t in turns if "first_audio_out" in t.stages_ms]
    end_to_audio = percentiles([t.stages_ms["first_audio_out"] for t in answered])
    return {
        "end_to_first_audio_ms": end_to_audio,
        "stages_ms": {
            stage: percentiles([t.stages_ms[stage] for t in turns if stage in t.stages_ms])
            for stage in STAGES
        },
        "ratio_to_goal": round(end_to_audio["p50"] / GOALS_MS[profile], 2),
        "heard_wer": heard_wer(references, [turn.heard for turn in turns]),
        # Replies that only repeat what was heard (benchmarks/replies.py): timed like answers.
        "replies_repeating_the_user": repeated_share([(t.heard, t.reply) for t in answered]),
        "utterances": len(turns),
        "answered": len(answered),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--profiles", nargs="+", default=["fast", "quality"], choices=list(GOALS_MS)
    )
    parser.add_argument("--utterances", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--logs", type=Path, help="copy each profile's service log here (<profile>.log)"
    )
    parser.add_argument(
        "--no-echo", action="store_true", help="skip the echo and barge-in part (exploring)"
    )
    args = parser.parse_args(argv)
    results: dict[str, dict[str, Any]] = {}
    replies: list[str] = []
    with tempfile.TemporaryDirectory(prefix="voice-bench") as scratch:
        root = Path(scratch)
        files = utterance_files(root, args.utterances)
        paths, references = [path for path, _ in files], [text for _, text in files]
        for profile in args.profiles:
            log(f"{profile}: {len(files)} utterances through brain serve")
            logs = None if args.logs is None else args.logs / f"{profile}.log"
            turns = asyncio.run(run_turns(profile, paths, root / profile, logs))
            results[profile] = summarise(profile, turns, references)
            results[profile]["heard_wer_whole_utterance"] = direct_wer(profile, files)
            replies += [t.reply for t in turns if t.reply]
        loop_figures: dict[str, Any] = {}
        if not args.no_echo:
            log("echo and barge-in on the voice loop")
            loop_figures = echo_and_barge_in(args.profiles[0], replies[: args.utterances])
    for figures in results.values():
        figures.update(loop_figures)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    for profile, figures in results.items():
        audio = figures["end_to_first_audio_ms"]
        print(
            f"{profile}: end of speech -> first audio p50 {audio['p50']:,.0f} ms, "
            f"p95 {audio['p95']:,.0f} ms ({figures['ratio_to_goal']}x the goal), "
            f"{figures['answered']}/{figures['utterances']} answered"
        )
        for stage, shown in figures["stages_ms"].items():
            print(f"  {stage}: p50 {shown['p50']:,.0f} ms, p95 {shown['p95']:,.0f} ms")
        print(
            f"  heard WER {figures['heard_wer']:.1%} (the same files transcribed whole: "
            f"{figures['heard_wer_whole_utterance']:.1%}); replies repeating the user "
            f"{figures['replies_repeating_the_user']}"
        )
        if "barge_in_stop_ms" not in figures:
            continue
        stop = figures["barge_in_stop_ms"]
        print(
            f"  barge-in stop p50 {stop['p50']:,.0f} ms, p95 {stop['p95']:,.0f} ms "
            f"({figures['barge_ins_detected']} detected); "
            f"self-trigger rate {figures['self_trigger_rate']:.0%}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
