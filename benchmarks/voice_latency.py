"""How long a spoken turn takes, from the end of the user's speech to the first sound of the
reply, through the whole product: `brain serve` with headless voice and the profile's real
local model. Then, on the voice loop, whether the reply's own echo interrupts it and how soon
a real person cutting in stops it.

    python -m benchmarks.voice_latency [--profiles fast quality] [--utterances 20]
                                       [--lived-in] [--snr-db 20] [--json]

Latency, per profile: `brain serve` started the way the app starts it (``audio.input_device =
none``: its microphone is silence at real-time pace, and ``Listen`` plays a file into it), in
a fresh data folder or (``--lived-in``) a copy of the profile's lived-in one
(benchmarks/lived_in.py); the first utterance is played once the service says its model is
ready and its microphone listening, and a heartbeat is made to tick before the middle one.
Each utterance is a WAV: the five LibriVox recordings from the pocketsphinx sdist, 15
Piper-spoken questions, the sdist's five recorded playing cards and five more questions (30 at
most; the first 20 are those of every earlier run), each followed by the silence of the
simulated microphone (real trailing silence, paced in real time). With ``--snr-db``, pink room
noise is mixed into every clip at that SNR below its speech and runs on 4 s after it
(benchmarks/speech_timing.py). The service reports the stage times of every spoken turn
(``VoiceTimings``): ``turn_decided`` (the end-of-turn silence, or a pause judged final),
``stt_done`` (the transcript: made then, or at the pause it ended at), ``memories``
(retrieved for the turn), ``prompt_sent`` (the LLM asked), ``first_token`` (the reply's first
text from the LLM), ``first_word`` (its first letter or digit), ``first_audio_synthesized``
(Piper's first chunk), ``first_audio_out`` (the first frame of it going to the speaker); all
in ms after the end of the user's speech as its VAD saw it (the last frame it took for
speech). ``first_audio_out_ms`` runs from the *true* end of speech instead: the end of the
clip's last speech in its clean audio (an energy threshold over its noise floor), the
service's figure plus ``vad_lag_ms``, how much later the VAD put the end (the same Silero
suppressor replayed over the clip as played; the headless microphone starts a clip on a frame
boundary). A turn with no audio out within 60 s (not heard, failed) counts at 60 s. The next
utterance is spoken once the reply has played out (waited for up to 5 minutes).
``ratio_to_goal`` is the first-audio p50 over the goal of the issue "Fast where the user is"
(fast 1.2 s, quality 2.5 s); ``end_to_first_audio_ms`` is the old figure (from the VAD's end,
answered turns only), kept to compare with earlier runs.

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

``first_content_audio_ms`` is the same for the first sound of the reply's own words, after a
fixed acknowledgement ("Okay.", said at once for a tool that speaks for itself) where the
reply opened with one.

``--json`` prints ``{"<profile>": {"first_audio_out_ms": {"p50", "p95", "max"},
"first_content_audio_ms", "end_to_first_audio_ms", "vad_lag_ms", "stages_ms":
{stage: {"p50", "p95"}}, "barge_in_stop_ms": {"p50", "p95"}, "self_trigger_rate",
"ratio_to_goal", "heard_wer", "heard_wer_whole_utterance", "utterances", "answered",
"lived_in", "snr_db"}}``.
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
from benchmarks.speech_timing import Clip, prepare_clips
from benchmarks.stats import percentiles
from voice.device import load_wav
from voice.timing import STAGES
from voice.wer import normalize, word_error_rate

# The first-audio goals of the issue "Fast where the user is" (p50, from the true end).
GOALS_MS = {"fast": 1200.0, "quality": 2500.0}
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

# A spoken turn with no audio out by then failed (and counts at this in the percentiles).
TURN_TIMEOUT_S = 60.0
# How long a turn is waited for, its reply played out included: the next clip is played only
# then (played over a long reply still speaking, it was not heard).
PLAYED_OUT_S = 300.0
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
    profile: str,
    files: Sequence[Path],
    root: Path,
    logs: Path | None = None,
    lived: Path | None = None,
) -> list[Turn]:
    """Each file spoken to a fresh ``brain serve`` (in a copy of the ``lived`` folder:
    lived_in.py), timed, a heartbeat made to tick before the middle one; ``logs``: where to
    copy what the service logged meanwhile."""
    from assistant.clients.connection import ServiceClient
    from assistant.config import load_config
    from assistant.protocol.conversation import Stop
    from assistant.protocol.tasks import Tick
    from assistant.protocol.voice import Listen

    root.mkdir(parents=True, exist_ok=True)
    if lived is not None:
        from benchmarks.lived_in import copy_into

        copy_into(lived, root / "data")
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
            if index == len(files) // 2 + 1:
                await client.send(Tick())
            await client.send(Listen(path=str(path)))
            turn = await spoken_turn(client, path.name)
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


async def spoken_turn(client: Any, name: str) -> Turn:
    """What the service heard and said for the file just played, once its reply has played
    out (or it heard nothing, or PLAYED_OUT_S passed)."""
    from assistant.protocol.conversation import ReplyEnd, UserSaid
    from assistant.protocol.voice import HeardNothing, Voice, VoiceTimings

    turn, number, ended = Turn(), None, False
    try:
        async with asyncio.timeout(PLAYED_OUT_S):
            async for update in client.updates():
                if isinstance(update, UserSaid) and update.client == "voice" and number is None:
                    number, turn.heard = update.turn, update.text
                elif isinstance(update, HeardNothing) and number is None:
                    log(f"  {name}: not heard ({update.reason})")
                    break
                elif isinstance(update, VoiceTimings) and update.turn == number:
                    turn.stages_ms = dict(update.stages_ms)
                elif isinstance(update, ReplyEnd) and update.turn == number:
                    turn.reply, ended = update.text, True
                elif isinstance(update, Voice) and ended and update.state == "listening":
                    break  # the reply has played out
    except TimeoutError:
        log(f"  {name}: timed out")
    return turn


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


def from_true_end(stage: str, turns: Sequence[Turn], clips: Sequence[Clip]) -> dict[str, float]:
    """``stage``'s percentiles from the true end of each clip's speech (the service's stage
    time, from its VAD's end, plus the clip's VAD lag); a turn that got there later than
    TURN_TIMEOUT_S, or never, counts at TURN_TIMEOUT_S."""
    limit = TURN_TIMEOUT_S * 1000
    return percentiles(
        [
            min(t.stages_ms[stage] + clip.vad_lag_ms, limit) if stage in t.stages_ms else limit
            for t, clip in zip(turns, clips, strict=True)
        ]
    )


def summarise(profile: str, turns: Sequence[Turn], clips: Sequence[Clip]) -> dict[str, Any]:
    """The figures of one profile's run. ``first_audio_out_ms`` runs from the true end of
    each clip's speech (the service's stage times, which run from its VAD's end, plus that
    clip's VAD lag); a turn with no audio out (not heard, failed, timed out) counts at
    TURN_TIMEOUT_S."""
    answered = [t for t in turns if "first_audio_out" in t.stages_ms]
    first_audio = from_true_end("first_audio_out", turns, clips)
    return {
        "first_audio_out_ms": first_audio,
        "first_content_audio_ms": from_true_end("first_content_audio_out", turns, clips),
        "end_to_first_audio_ms": percentiles([t.stages_ms["first_audio_out"] for t in answered]),
        "vad_lag_ms": percentiles([clip.vad_lag_ms for clip in clips]),
        "stages_ms": {
            stage: percentiles([t.stages_ms[stage] for t in turns if stage in t.stages_ms])
            for stage in STAGES
        },
        "ratio_to_goal": round(first_audio["p50"] / GOALS_MS[profile], 2),
        "heard_wer": heard_wer([clip.text for clip in clips], [turn.heard for turn in turns]),
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
    parser.add_argument(
        "--lived-in", action="store_true", help="each service in a copy of the lived-in folder"
    )
    parser.add_argument(
        "--snr-db", type=float, default=None, help="room noise mixed in at this SNR (dB)"
    )
    args = parser.parse_args(argv)
    results: dict[str, dict[str, Any]] = {}
    replies: list[str] = []
    with tempfile.TemporaryDirectory(prefix="voice-bench") as scratch:
        root = Path(scratch)
        files = utterance_files(root, args.utterances)
        clips = prepare_clips(files, root, args.snr_db)
        played = [(clip.path, clip.text) for clip in clips]
        for profile in args.profiles:
            log(f"{profile}: {len(files)} utterances through brain serve")
            logs = None if args.logs is None else args.logs / f"{profile}.log"
            lived = None
            if args.lived_in:
                from benchmarks.lived_in import lived_in

                lived = lived_in(profile)
            paths = [clip.path for clip in clips]
            turns = asyncio.run(run_turns(profile, paths, root / profile, logs, lived))
            results[profile] = summarise(profile, turns, clips)
            results[profile]["heard_wer_whole_utterance"] = direct_wer(profile, played)
            results[profile]["lived_in"] = args.lived_in
            results[profile]["snr_db"] = args.snr_db
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
        audio, lag = figures["first_audio_out_ms"], figures["vad_lag_ms"]
        print(
            f"{profile}: true end of speech -> first audio p50 {audio['p50']:,.0f} ms, "
            f"p95 {audio['p95']:,.0f} ms, max {audio['max']:,.0f} ms "
            f"({figures['ratio_to_goal']}x the goal), {figures['answered']}/"
            f"{figures['utterances']} answered; the VAD's end lags the true end by p50 "
            f"{lag['p50']:,.0f} ms; first content audio p50 "
            f"{figures['first_content_audio_ms']['p50']:,.0f} ms"
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
