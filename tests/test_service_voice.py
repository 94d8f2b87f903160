"""The service's voice, headless (no sound card here): a WAV spoken into it becomes a turn,
the reply is spoken, and cutting it off leaves only what was heard in the agent's memory.
Real Silero VAD, Whisper tiny.en and Piper; a scripted OpenAI-compatible endpoint."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from assistant.agent.wiring import open_stores
from assistant.clients.connection import ServiceClient
from assistant.clients.terminal import listen
from assistant.config import LoadedConfig
from assistant.protocol.common import Notice
from assistant.protocol.conversation import ReplyCut, ReplyEnd, UserSaid
from assistant.protocol.voice import Listen, SetVoice, StopSpeaking, Voice, VoiceTimings
from memory.embedder import OnnxSentenceEmbedder
from tests.helpers.fake_openai import scripted_endpoint
from tests.helpers.service import InProcess, action, until
from voice.timing import STAGES
from voice.wer import word_error_rate

GO_FORWARD = Path(__file__).parent.parent / "voice" / "data" / "goforward.wav"
LONG_REPLY = (
    "Going forward ten meters now. The path ahead is clear, and the floor is dry. "
    "I will stop at the door, then wait for your next instruction before moving again."
)
pytestmark = pytest.mark.slow


@pytest.fixture
def voice_loaded(loaded_for: Callable[..., LoadedConfig]) -> Callable[..., LoadedConfig]:
    def make(**flags: str) -> LoadedConfig:
        return loaded_for(**{"voice.enabled": "true", "audio.input_device": "none", **flags})

    return make


async def test_a_wav_spoken_in_is_a_turn_and_its_reply_is_spoken(
    voice_loaded: Callable[..., LoadedConfig], start_service: Callable[..., InProcess]
) -> None:
    with scripted_endpoint("stream", action("Going forward ten meters.")) as (url, _):
        loaded = voice_loaded(**{"llm.base_url": url})
        start_service(loaded)
        watcher = await ServiceClient.connect(loaded, "watcher", start=False)
        out, err = io.StringIO(), io.StringIO()
        assert await listen(loaded, GO_FORWARD, out, err) == 0, err.getvalue()
        # listen() returned once the reply was spoken: the watcher has seen it all.
        seen = await until(watcher, lambda u: isinstance(u, VoiceTimings))
        seen += await until(watcher, lambda u: isinstance(u, Voice) and u.state == "listening")
        said = next(u for u in seen if isinstance(u, UserSaid))
        assert said.client == "voice" and said.confidence is not None
        assert word_error_rate("go forward ten meters", said.text) <= 0.25
        assert f"you (spoken, {said.confidence:.0%} sure)> {said.text}" in out.getvalue()
        assert "brain> Going forward ten meters." in out.getvalue()
        timings = next(u for u in seen if isinstance(u, VoiceTimings))
        assert list(timings.stages_ms) == list(STAGES), "every stage, in order"
        assert list(timings.stages_ms.values()) == sorted(timings.stages_ms.values())
        assert "after the end of speech: turn_decided" in err.getvalue()
        states = {u.state for u in seen if isinstance(u, Voice)}
        assert {"hearing", "speaking", "listening"} <= states

        await watcher.send(SetVoice(mode="muted"))
        await until(watcher, lambda u: isinstance(u, Voice) and u.state == "muted")
        await watcher.close()


async def test_stopping_the_spoken_reply_keeps_only_what_was_heard(
    voice_loaded: Callable[..., LoadedConfig],
    start_service: Callable[..., InProcess],
    embedder: OnnxSentenceEmbedder,
) -> None:
    with scripted_endpoint("stream", action(LONG_REPLY)) as (url, _):
        loaded = voice_loaded(**{"llm.base_url": url})
        service = start_service(loaded)
        client = await ServiceClient.connect(loaded, "tui", start=False)
        await client.send(Listen(path=str(GO_FORWARD)))
        seen = await until(client, lambda u: isinstance(u, VoiceTimings))  # it is playing
        turn = next(u for u in seen if isinstance(u, UserSaid)).turn
        if not any(isinstance(u, ReplyEnd) for u in seen):
            await until(client, lambda u: isinstance(u, ReplyEnd))
        await asyncio.sleep(1.5)  # a few words into the reply
        await client.send(StopSpeaking())
        cut = (await until(client, lambda u: isinstance(u, ReplyCut)))[-1]
        assert isinstance(cut, ReplyCut) and cut.turn == turn
        heard = cut.heard.split()
        assert 0 < len(heard) < len(LONG_REPLY.split())
        assert heard == LONG_REPLY.split()[: len(heard)]
        await client.close()
        service.stop()

    stores = open_stores(loaded.settings.data_dir, embedder, rate=False, core_memory_chars=1200)
    try:
        texts = [r.text for r in stores.stream.list_memories(page_size=20).items]
        assert f"Brain OS: {cut.heard} [interrupted]" in texts
        assert f"Brain OS: {LONG_REPLY}" not in texts
        notes = [m.text for m in stores.recall.recent(10) if m.role == "system"]
        assert any(cut.heard in note and "interrupted" in note for note in notes)
    finally:
        stores.stream.close()


async def test_voice_requests_say_why_they_cannot_be_done(
    voice_loaded: Callable[..., LoadedConfig],
    start_service: Callable[..., InProcess],
    tmp_path: Path,
) -> None:
    loaded = voice_loaded(**{"llm.base_url": "http://127.0.0.1:9/v1"})
    start_service(loaded)
    client = await ServiceClient.connect(loaded, "tui", start=False)
    not_audio = tmp_path / "notes.wav"
    not_audio.write_text(json.dumps({"not": "audio"}), encoding="utf-8")
    await client.send(Listen(path=str(not_audio)))
    notice = (await until(client, lambda u: isinstance(u, Notice) and u.level == "error"))[-1]
    assert isinstance(notice, Notice) and "notes.wav" in notice.text
    assert "\n" not in notice.text
    await client.close()
