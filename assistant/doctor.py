"""``brain doctor``: load every part of the chosen profile and prove that each one works."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from assistant.llm.client import LLMClient
from assistant.llm.runtime import LLMRuntime
from assistant.model_paths import ProfileModels
from assistant.parts import load_embedder, load_stt, load_tts
from assistant.settings import Settings
from memory.database import open_database
from models import ProgressCallback
from voice.audio import SAMPLE_RATE
from voice.device import load_wav
from voice.devices import list_audio_devices
from voice.stt import WhisperSTT
from voice.turn_end import SmartTurn
from voice.wer import word_error_rate

SPOKEN_CLIP_TEXT = "go forward ten meters"
SPOKEN_CLIP_MAX_WER = 0.25
SUM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"sum": {"type": "integer"}},
    "required": ["sum"],
}


class CheckFailed(Exception):
    """A part loaded but did not do its job."""


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    seconds: float
    detail: str

    def line(self) -> str:
        mark = "ok  " if self.ok else "FAIL"
        return f"{mark} {self.name:<9} {self.seconds:6.2f} s  {self.detail}"


def spoken_clip() -> Path:
    return Path(str(files("voice").joinpath("data/goforward.wav")))


class Doctor:
    def __init__(self, settings: Settings, progress: ProgressCallback | None = None) -> None:
        self.settings = settings
        self.models = ProfileModels(settings, progress)
        self._stt: WhisperSTT | None = None

    def run(self, on_result: Callable[[CheckResult], None] | None = None) -> list[CheckResult]:
        checks: list[tuple[str, Callable[[], str]]] = [
            ("stt", self.check_stt),
            ("tts", self.check_tts),
            ("llm", self.check_llm),
            ("embedder", self.check_embedder),
            ("turn", self.check_turn),
            ("database", self.check_database),
            ("audio", self.check_audio),
        ]
        results = []
        for name, check in checks:
            started = time.perf_counter()
            try:
                detail, ok = check(), True
            except Exception as error:  # a doctor reports every failure, whatever its type
                detail, ok = f"{type(error).__name__}: {error}", False
            result = CheckResult(name, ok, time.perf_counter() - started, detail)
            results.append(result)
            if on_result:
                on_result(result)
        return results

    def check_stt(self) -> str:
        paths = self.models.stt()
        stt = self._stt = load_stt(self.settings, paths)
        heard = stt.transcribe_file(spoken_clip())
        wer = word_error_rate(SPOKEN_CLIP_TEXT, heard.text)
        if wer > SPOKEN_CLIP_MAX_WER:
            raise CheckFailed(f"{paths.name} heard {heard.text!r} for {SPOKEN_CLIP_TEXT!r}")
        return f"{paths.name}: heard {heard.text!r} (WER {wer:.2f})"

    def check_tts(self) -> str:
        paths = self.models.tts()
        tts = load_tts(self.settings, paths)
        sentence = "The assistant is ready to talk."
        started = time.perf_counter()
        speech = tts.speak(sentence)
        elapsed = time.perf_counter() - started
        loudness = float(np.abs(speech.samples.astype(np.float32)).mean())
        if speech.duration_s < 0.5 or loudness < 50:
            raise CheckFailed(f"{paths.name} produced {speech.duration_s:.2f} s of near-silence")
        rtf = elapsed / speech.duration_s
        detail = f"{paths.name}: {speech.duration_s:.2f} s of audio, RTF {rtf:.3f}"
        if self._stt is not None:
            heard = self._stt.transcribe(speech.as_float(16_000))
            detail += f", heard back as {heard.text!r}"
        return detail

    def check_llm(self) -> str:
        runtime = LLMRuntime(self.settings, self.models)
        with runtime as client:
            return _exercise_llm(client)

    def check_embedder(self) -> str:
        paths = self.models.embedder()
        embedder = load_embedder(self.settings, paths)
        vectors = embedder.embed(
            ["The cat sits on the mat.", "A kitten rests on a rug.", "Interest rates rose today."]
        )
        similar, unrelated = float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])
        if not similar > unrelated:
            raise CheckFailed(f"similar sentences scored {similar:.2f}, unrelated {unrelated:.2f}")
        return (
            f"{paths.name}: {embedder.dimensions} dimensions, "
            f"similar {similar:.2f} > unrelated {unrelated:.2f}"
        )

    def check_turn(self) -> str:
        path = self.models.turn()
        judge = SmartTurn(path)
        pause = np.zeros(SAMPLE_RATE // 5, dtype=np.float32)
        clip = np.concatenate([load_wav(spoken_clip()), pause])
        finished = judge.finished(clip)
        if not 0.0 <= finished <= 1.0:
            raise CheckFailed(f"the turn judge gave {finished} for a finished sentence")
        state = "on" if self.settings.voice.turn_judge else "off (voice.turn_judge)"
        return f"{path.stem}: {SPOKEN_CLIP_TEXT!r} judged finished at {finished:.2f}; {state}"

    def check_database(self) -> str:
        database = open_database(self.settings.data_dir)
        name = f"doctor_{uuid.uuid4().hex[:8]}"
        table = database.create_table(name, data=[{"id": 1, "vector": [0.1, 0.2], "text": "hi"}])
        try:
            found = table.search([0.1, 0.2]).limit(1).to_list()
            if not found or found[0]["text"] != "hi":
                raise CheckFailed("a row written to LanceDB did not come back")
        finally:
            database.drop_table(name)
        return f"LanceDB at {self.settings.data_dir / 'memory.lance'}: write, search, drop"

    def check_audio(self) -> str:
        devices = list_audio_devices()
        if devices.problem:
            return devices.problem
        names = ", ".join(d.name for d in devices.devices[:4])
        return f"{devices.summary()}: {names}"


def _exercise_llm(client: LLMClient) -> str:
    plain = client.complete(
        [{"role": "user", "content": "Reply with exactly one word: ready"}], max_tokens=8
    )
    if not plain.strip():
        raise CheckFailed("the plain reply was empty")
    pieces = list(
        client.stream(
            [{"role": "user", "content": "Count from one to five in words."}], max_tokens=24
        )
    )
    if len(pieces) < 2:
        raise CheckFailed(f"the streamed reply came in {len(pieces)} piece(s)")
    answer = client.complete_json(
        [{"role": "user", "content": "What is 2 + 3? Answer as JSON with the key sum."}],
        SUM_SCHEMA,
        max_tokens=24,
    )
    if not isinstance(answer.get("sum"), int):
        raise CheckFailed(f"the JSON reply {answer} has no integer 'sum'")
    return (
        f"{client.endpoint.label}: plain {plain.strip()[:20]!r}, "
        f"streamed {len(pieces)} pieces, JSON {answer}"
    )


def results_json(settings: Settings, results: list[CheckResult]) -> dict[str, Any]:
    return {
        "profile": settings.profile,
        "ok": all(r.ok for r in results),
        "checks": [asdict(r) for r in results],
    }
