"""Benchmark the Brain OS stack on this machine: load times, speech and LLM speed per profile.

    python -m benchmarks.stack [--profiles quality fast] [--json] [--repeats N]

For each profile (quality and fast by default) it measures:

* load time of each part: Whisper STT, Piper TTS, the local llama.cpp server (start until it
  answers) and the MiniLM embedder. Model files are resolved first (split weights are assembled
  once into the settings' cache_dir) and that is not counted;
* STT real-time factor (processing seconds / audio seconds) on the five LibriVox clips of the
  pocketsphinx 5.1.1 source distribution (see benchmarks.speech_data) and on a 2.8 s command
  (voice/data/goforward.wav), and the word error rate on the LibriVox clips;
* TTS real-time factor (synthesis seconds / audio seconds) over a few sentences, and the time
  to the first streamed chunk of a short two-sentence reply;
* the LLM through the openai client, on a ~1,000-token prompt: time to first token (TTFT) cold
  (no prefix shared with an earlier request) and with the system prompt's prefix already in the
  server's KV cache, prefill tokens/s (prompt tokens / TTFT) and decode tokens/s on a
  64-token reply at temperature 0; the speedup is cold TTFT / reused TTFT (medians).

Every timed figure is the median and p95 over ``--repeats`` runs, after one untimed warm-up.
Settings come from assistant.config.load_config (config file, BRAIN_* variables); --profiles
overrides ``profile``. The human-readable table goes to stdout, progress to stderr; --json
prints one JSON object instead of the table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from importlib.resources import files
from pathlib import Path
from typing import Any, TypeVar, cast, get_args

import numpy as np
import openai
from numpy.typing import NDArray

from assistant.config import ConfigError, load_config
from assistant.llm.client import Endpoint, LLMClient, LLMError
from assistant.llm.messages import Message
from assistant.llm.server import LLMServerError, LocalLLMServer, ServerOptions
from assistant.model_paths import EmbedderPaths, ProfileModels, SttPaths, TtsPaths
from assistant.parts import load_embedder, load_stt, load_tts
from assistant.settings import Profile, Settings
from benchmarks.speech_data import SpeechDataError, librivox_clips
from models import ModelError
from voice.stt import SAMPLE_RATE, WhisperSTT
from voice.tts import PiperTTS
from voice.wer import normalize, word_error_rate

T = TypeVar("T")
Stats = dict[str, float]
Report = dict[str, Any]

PROFILES: tuple[Profile, ...] = get_args(Profile)
SHORT_CLIP = Path(str(files("voice").joinpath("data/goforward.wav")))
TTS_SENTENCES = (
    "Good morning. It is seven degrees outside and the sky is clear.",
    "Your first meeting starts at half past nine, in the small room on the second floor.",
    "I have added milk, bread and two lemons to the shopping list.",
)
TTS_FIRST_CHUNK_TEXT = "Sure, I can do that. The kitchen lights are off now."
REPLY_TOKENS = 64
PROMPT_NOTES = 40
ROOMS = ("kitchen", "hall", "study", "bedroom", "garage")
DEVICES = ("light", "heater", "blind", "speaker")
COLD_QUESTION = "Describe in detail every device in the kitchen and its level."
REUSED_QUESTION = "Describe in detail every device in the study and its level."


class BenchmarkError(Exception):
    """A part answered, but not with something that can be measured."""


def summarize(values: Sequence[float]) -> Stats:
    return {"median": statistics.median(values), "p95": float(np.percentile(values, 95))}


def timed(action: Callable[[], T]) -> tuple[T, float]:
    started = time.perf_counter()
    result = action()
    return result, time.perf_counter() - started


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def load_repeatedly(
    load: Callable[[], T], repeats: int, release: Callable[[T], None] | None = None
) -> tuple[T, Stats]:
    """Load a part ``repeats`` times; return the last one (the others are released)."""
    seconds = []
    part, elapsed = timed(load)
    seconds.append(elapsed)
    for _ in range(repeats - 1):
        if release is not None:
            release(part)
        part, elapsed = timed(load)
        seconds.append(elapsed)
    return part, summarize(seconds)


# Machine


def machine() -> Report:
    return {
        "cpus": os.cpu_count(),
        "cpu_model": cpu_model(),
        "python": platform.python_version(),
        "system": platform.platform(),
    }


def cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


# Speech to text


def read_audio(path: Path) -> NDArray[np.float32]:
    from faster_whisper import decode_audio

    audio: NDArray[np.float32] = decode_audio(str(path), sampling_rate=SAMPLE_RATE)
    return audio


def corpus_wer(references: Sequence[str], hypotheses: Sequence[str]) -> float:
    """Word errors over all clips / reference words over all clips."""
    words = [len(normalize(reference)) for reference in references]
    errors = sum(
        word_error_rate(reference, hypothesis) * count
        for reference, hypothesis, count in zip(references, hypotheses, words, strict=True)
    )
    return errors / sum(words)


def transcribe_all(
    stt: WhisperSTT, clips: Sequence[NDArray[np.float32]]
) -> tuple[list[str], float]:
    """The texts heard and the seconds spent transcribing (decoding excluded)."""
    texts, busy = [], 0.0
    for audio in clips:
        transcript, seconds = timed(partial(stt.transcribe, audio))
        texts.append(transcript.text)
        busy += seconds
    return texts, busy


def bench_stt(settings: Settings, paths: SttPaths, repeats: int) -> tuple[Stats, Report]:
    log(f"{settings.profile}: stt")
    stt, load = load_repeatedly(partial(load_stt, settings, paths), repeats)
    wavs, references = zip(*librivox_clips(), strict=True)
    clips = [read_audio(wav) for wav in wavs]
    short = read_audio(SHORT_CLIP)
    stt.transcribe(short)  # warm-up
    clips_s = sum(len(audio) for audio in clips) / SAMPLE_RATE
    short_s = len(short) / SAMPLE_RATE
    librivox_rtf: list[float] = []
    short_rtf: list[float] = []
    heard: list[str] = []
    for _ in range(repeats):
        heard, busy = transcribe_all(stt, clips)
        librivox_rtf.append(busy / clips_s)
        short_rtf.append(timed(partial(stt.transcribe, short))[1] / short_s)
    return load, {
        "librivox_audio_s": clips_s,
        "librivox_rtf": summarize(librivox_rtf),
        "librivox_wer": corpus_wer(references, heard),
        "short_audio_s": short_s,
        "short_rtf": summarize(short_rtf),
    }


# Text to speech


def first_chunk_seconds(tts: PiperTTS, text: str) -> float:
    """Seconds from the call to the first streamed chunk (the rest is drained, untimed)."""
    started = time.perf_counter()
    first: float | None = None
    for _ in tts.stream(text):
        if first is None:
            first = time.perf_counter() - started
    if first is None:
        raise BenchmarkError(f"TTS produced no audio for {text!r}")
    return first


def synthesis_rtf(tts: PiperTTS, sentences: Sequence[str]) -> float:
    speeches, seconds = timed(lambda: [tts.speak(sentence) for sentence in sentences])
    return seconds / sum(speech.duration_s for speech in speeches)


def bench_tts(settings: Settings, paths: TtsPaths, repeats: int) -> tuple[Stats, Report]:
    log(f"{settings.profile}: tts")
    tts, load = load_repeatedly(partial(load_tts, settings, paths), repeats)
    tts.speak(TTS_FIRST_CHUNK_TEXT)  # warm-up
    rtf = [synthesis_rtf(tts, TTS_SENTENCES) for _ in range(repeats)]
    first = [first_chunk_seconds(tts, TTS_FIRST_CHUNK_TEXT) for _ in range(repeats)]
    return load, {"rtf": summarize(rtf), "first_chunk_s": summarize(first)}


# LLM


@dataclass(frozen=True)
class StreamTiming:
    ttft_s: float
    total_s: float


@dataclass(frozen=True)
class LlmRound:
    cold: StreamTiming
    reused: StreamTiming
    cold_prompt_tokens: int
    reused_prompt_tokens: int
    reused_reply_tokens: int


def system_prompt(conversation_id: str) -> str:
    """About 1,000 tokens; the id comes first, so prompts with different ids share no prefix."""
    notes = " ".join(
        f"Note {i}: the {ROOMS[i % len(ROOMS)]} {DEVICES[i % len(DEVICES)]} was set to "
        f"level {i % 7} on day {i} of the month."
        for i in range(PROMPT_NOTES)
    )
    return (
        f"{conversation_id} is the id of this conversation. You are Brain, an offline voice "
        f"assistant. Answer from these notes about the house. {notes}"
    )


def conversation(system: str, question: str) -> list[Message]:
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


def stream_timing(client: LLMClient, messages: Sequence[Message]) -> StreamTiming:
    started = time.perf_counter()
    first: float | None = None
    for _ in client.stream(messages, max_tokens=REPLY_TOKENS, temperature=0.0):
        if first is None:
            first = time.perf_counter() - started
    if first is None:
        raise BenchmarkError(f"{client.endpoint.label} streamed an empty reply")
    return StreamTiming(first, time.perf_counter() - started)


def token_usage(
    counter: openai.OpenAI, model: str, messages: Sequence[Message], max_tokens: int
) -> tuple[int, int]:
    """(prompt tokens, completion tokens) of a non-streamed request, from its usage field."""
    response = counter.chat.completions.create(
        model=model,
        messages=cast(Any, list(messages)),
        max_tokens=max_tokens,
        temperature=0.0,
    )
    if response.usage is None:
        raise BenchmarkError(f"the LLM at {counter.base_url} reported no token usage")
    return response.usage.prompt_tokens, response.usage.completion_tokens


def llm_round(client: LLMClient, counter: openai.OpenAI) -> LlmRound:
    """A cold request, then one reusing its system prompt; tokens counted afterwards."""
    system = system_prompt(uuid.uuid4().hex)
    cold_messages = conversation(system, COLD_QUESTION)
    reused_messages = conversation(system, REUSED_QUESTION)
    cold = stream_timing(client, cold_messages)
    reused = stream_timing(client, reused_messages)
    model = client.endpoint.model
    cold_prompt, _ = token_usage(counter, model, cold_messages, 1)
    # Temperature 0 replays the streamed reply, so its usage gives the streamed token count.
    reused_prompt, reused_reply = token_usage(counter, model, reused_messages, REPLY_TOKENS)
    return LlmRound(cold, reused, cold_prompt, reused_prompt, reused_reply)


def decode_rate(timing: StreamTiming, reply_tokens: int) -> float:
    # The first token arrived with the TTFT; the rest were decoded after it.
    return (reply_tokens - 1) / (timing.total_s - timing.ttft_s)


def llm_report(rounds: Sequence[LlmRound]) -> Report:
    cold_ttft = [r.cold.ttft_s for r in rounds]
    reused_ttft = [r.reused.ttft_s for r in rounds]
    return {
        "prompt_tokens": round(statistics.median(r.cold_prompt_tokens for r in rounds)),
        "reply_tokens": round(statistics.median(r.reused_reply_tokens for r in rounds)),
        "cold": {
            "ttft_s": summarize(cold_ttft),
            "prefill_tok_s": summarize([r.cold_prompt_tokens / r.cold.ttft_s for r in rounds]),
        },
        "reused": {
            "ttft_s": summarize(reused_ttft),
            "effective_prefill_tok_s": summarize(
                [r.reused_prompt_tokens / r.reused.ttft_s for r in rounds]
            ),
        },
        "decode_tok_s": summarize([decode_rate(r.reused, r.reused_reply_tokens) for r in rounds]),
        "ttft_speedup": statistics.median(cold_ttft) / statistics.median(reused_ttft),
    }


def started_server(options: ServerOptions) -> LocalLLMServer:
    server = LocalLLMServer(options)
    server.start()
    return server


def bench_llm(settings: Settings, name: str, gguf: Path, repeats: int) -> tuple[Stats, Report]:
    log(f"{settings.profile}: llm")
    llm = settings.llm
    alias = llm.model or name
    options = ServerOptions(
        gguf=gguf,
        model_alias=alias,
        context_window=llm.context_window,
        threads=llm.threads,
        startup_timeout_s=llm.startup_timeout_s,
        max_restarts=0,  # a restarted server would skew the figures; fail instead
        log_path=settings.log_dir / "llm-server-benchmark.log",
    )
    server, load = load_repeatedly(
        partial(started_server, options), repeats, release=LocalLLMServer.stop
    )
    try:
        endpoint = Endpoint(server.base_url, alias, None, is_local=True)
        client = LLMClient(endpoint, timeout_s=llm.timeout_s, json_mode=llm.json_mode)
        counter = openai.OpenAI(base_url=server.base_url, api_key="local", timeout=llm.timeout_s)
        try:
            client.complete([{"role": "user", "content": "Say hi."}], max_tokens=4)  # warm-up
            rounds = [llm_round(client, counter) for _ in range(repeats)]
        finally:
            counter.close()
            client.close()
    finally:
        server.stop()
    return load, llm_report(rounds)


# Embedder


def bench_embedder(settings: Settings, paths: EmbedderPaths, repeats: int) -> Stats:
    log(f"{settings.profile}: embedder")
    _, load = load_repeatedly(partial(load_embedder, settings, paths), repeats)
    return load


# Profiles and output


def bench_profile(profile: Profile, repeats: int) -> Report:
    settings = load_config(flags={"profile": profile}).settings
    models = ProfileModels(settings)
    log(f"{profile}: resolving models in {settings.models_cache_dir}")
    stt, tts, llm, embedder = models.stt(), models.tts(), models.llm(), models.embedder()
    stt_load, stt_report = bench_stt(settings, stt, repeats)
    tts_load, tts_report = bench_tts(settings, tts, repeats)
    llm_load, llm_figures = bench_llm(settings, llm.name, llm.gguf, repeats)
    embedder_load = bench_embedder(settings, embedder, repeats)
    return {
        "models": {"stt": stt.name, "tts": tts.name, "llm": llm.name, "embedder": embedder.name},
        "threads": {
            "stt": settings.stt.threads,
            "tts": settings.tts.threads,
            "llm": settings.llm.threads,
            "embedder": settings.embedder.threads,
        },
        "load_s": {"stt": stt_load, "tts": tts_load, "llm": llm_load, "embedder": embedder_load},
        "stt": stt_report,
        "tts": tts_report,
        "llm": llm_figures,
    }


def figure_rows(report: Report, prefix: str = "") -> list[tuple[str, str, str]]:
    """(figure, median, p95) rows; a single value goes in the median column."""
    rows: list[tuple[str, str, str]] = []
    for key, value in report.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict) and set(value) == {"median", "p95"}:
            rows.append((name, number(value["median"]), number(value["p95"])))
        elif isinstance(value, dict):
            rows.extend(figure_rows(value, f"{name}."))
        else:
            rows.append((name, number(value), ""))
    return rows


def number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    return f"{value:.3f}" if abs(value) < 100 else f"{value:.0f}"


def render_table(results: Report, repeats: int) -> str:
    host = results["machine"]
    lines = [
        f"Brain OS stack benchmark: {host['cpus']} CPUs ({host['cpu_model']}), "
        f"Python {host['python']}; median and p95 of {repeats} runs"
    ]
    for profile in PROFILES:
        if profile not in results:
            continue
        report = results[profile]
        parts = ", ".join(f"{part} {name}" for part, name in report["models"].items())
        threads = ", ".join(f"{part} {count}" for part, count in report["threads"].items())
        lines += ["", f"{profile}: {parts}", f"  threads: {threads}"]
        lines.append(f"  {'figure':<36} {'median':>10} {'p95':>10}")
        figures = {key: value for key, value in report.items() if key not in ("models", "threads")}
        lines += [
            f"  {name:<36} {median:>10} {p95:>10}" for name, median, p95 in figure_rows(figures)
        ]
    return "\n".join(lines)


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive whole number")
    return value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.stack",
        description="Measure load times, STT/TTS real-time factors and LLM speed per profile.",
    )
    parser.add_argument(
        "--profiles",
        nargs="+",
        choices=PROFILES,
        default=list(PROFILES),
        help="profiles to measure (overrides the profile setting; default: all)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--repeats", type=positive_int, default=5, help="runs per timed figure (default 5)"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    results: Report = {"machine": machine(), "repeats": args.repeats}
    try:
        for profile in dict.fromkeys(args.profiles):
            results[profile] = bench_profile(profile, args.repeats)
    except (
        ConfigError,
        ModelError,
        SpeechDataError,
        LLMServerError,
        LLMError,
        openai.APIError,
        BenchmarkError,
    ) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(results, indent=2) if args.json else render_table(results, args.repeats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
