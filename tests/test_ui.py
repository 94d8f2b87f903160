"""The terminal app, driven by Textual's Pilot: a window onto a real `brain serve` process
(started by the app as a user's first window would), with the real local model or a scripted
endpoint."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.markdown import Markdown
from rich.text import Text
from textual.widgets import Input

from assistant.agent.checks.text import sentences
from assistant.agent.wiring import open_stores
from assistant.clients.connection import ServiceClient
from assistant.clients.terminal import ask, stop
from assistant.config import LoadedConfig
from assistant.protocol.voice import Listen
from assistant.service.paths import OwnerLock, socket_path
from memory.embedder import OnnxSentenceEmbedder
from tests.conftest import make_loaded
from tests.helpers.fake_openai import scripted_endpoint
from tests.helpers.service import action
from tests.helpers.ui import wait_for
from ui.app import BrainApp
from ui.screens.conversation import ConversationScreen
from ui.widgets.chat import MessageView, heard_end
from ui.widgets.voice import LevelMeter

# Voice on, headless: Whisper and Piper load, and a WAV is "spoken" with a Listen request.
HEADLESS_VOICE = {"voice.enabled": "true", "audio.input_device": "none"}
REQUESTS_OF_SEVERAL_SENTENCES = (
    "Name five fruits, one per line.",
    "Give me three tips for sleeping well, one sentence each.",
    "Tell me two short facts about the moon.",
)
GO_FORWARD = Path(__file__).parent.parent / "voice" / "data" / "goforward.wav"


@pytest.fixture
def loaded_for(
    tmp_path: Path, session_cache: Path, runtime_dir: Path
) -> Callable[..., LoadedConfig]:
    def make(**flags: str) -> LoadedConfig:
        return make_loaded(
            "fast",
            tmp_path / "data",
            session_cache,
            **{"service.runtime_dir": str(runtime_dir), **flags},
        )

    return make


def status_text(screen: ConversationScreen) -> str:
    return str(screen.query_one("#status-text").render())


def voice_text(screen: ConversationScreen) -> str:
    return str(screen.query_one("#voice-state").render())


def views(screen: ConversationScreen, role: str) -> list[MessageView]:
    return [v for v in screen.query(MessageView) if v.role == role]


async def quit_and_wait(pilot: object, loaded: LoadedConfig) -> None:
    await pilot.press("ctrl+q")  # type: ignore[attr-defined]
    assert await asyncio.to_thread(OwnerLock(loaded.settings.data_dir).wait_free, 60)
    assert not socket_path(loaded.settings).exists(), "the service stopped with the window"


async def typed_reply(
    pilot: object, screen: ConversationScreen, text: str, number: int
) -> tuple[MessageView, set[str]]:
    """The ``number``th reply, to ``text`` typed and sent, once written, with each text it
    showed on the way."""
    await pilot.click("#prompt")  # type: ignore[attr-defined]
    await pilot.press(*text)  # type: ignore[attr-defined]
    await pilot.press("enter")  # type: ignore[attr-defined]
    await wait_for(lambda: len(views(screen, "assistant")) == number, 30)
    reply = views(screen, "assistant")[-1]
    seen: set[str] = set()

    def finished() -> bool:
        if reply.text:
            seen.add(reply.text)
        return not screen.replying

    await wait_for(finished, 120)
    return reply, seen


@pytest.mark.slow
async def test_typed_question_gets_a_streamed_reply_from_the_local_model(
    loaded_for: Callable[..., LoadedConfig], embedder: OnnxSentenceEmbedder
) -> None:
    loaded = loaded_for()
    app = BrainApp(loaded)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, ConversationScreen)
        assert "qwen2.5-coder-0.5b-instruct" in str(screen.sub_title)
        await wait_for(lambda: screen.state == "ready", 240)
        assert "at http://127.0.0.1:" in str(screen.sub_title)

        # A reply is held back a sentence at a time (the checks read whole sentences), so
        # only a reply of several sentences can show in pieces; the model's form for a
        # request shifts with the date and time in its prompt, so a few requests are tried.
        asked = ""
        for number, asked in enumerate(REQUESTS_OF_SEVERAL_SENTENCES, start=1):
            reply, seen = await typed_reply(pilot, screen, asked, number)
            assert reply.text.strip()
            if len(sentences(reply.text)) > 1:
                assert len(seen) > 1, "a reply of several sentences should appear piece by piece"
                break
        else:
            pytest.fail("no request had a reply of more than one sentence")
        await quit_and_wait(pilot, loaded)
    assert app.farewell is None
    stores = open_stores(loaded.settings.data_dir, embedder, rate=False, core_memory_chars=1200)
    said = [(m.role, m.text) for m in stores.recall.recent(5) if m.role != "tool"]
    assert said[-2:] == [("user", asked), ("assistant", reply.text)]
    stores.stream.close()


async def test_a_turn_from_another_client_shows_in_the_window(
    loaded_for: Callable[..., LoadedConfig],
) -> None:
    with scripted_endpoint("stream", action("Aya lives in **Lugano**.")) as (url, _):
        loaded = loaded_for(**{"llm.base_url": url})
        app = BrainApp(loaded)
        async with app.run_test(size=(100, 30)) as pilot:
            screen = app.screen
            assert isinstance(screen, ConversationScreen)
            await wait_for(lambda: screen.state == "ready", 60)
            assert "voice off" in voice_text(screen)
            answered = await ask(loaded, "Where does Aya live?")
            assert answered == 0
            await wait_for(lambda: views(screen, "assistant") and not screen.replying, 30)
            [user] = views(screen, "user")
            assert user.text == "Where does Aya live?" and user.note == "typed in ask"
            [reply] = views(screen, "assistant")
            assert reply.text == "Aya lives in **Lugano**."
            assert isinstance(reply.content, Markdown), "a reply is rendered as Markdown"
            assert isinstance(user.content, Text), "what the user typed is shown as typed"

            # Up in the prompt brings back what was sent (from any window), Down the draft.
            await pilot.click("#prompt")
            await pilot.press(*"draft", "up")
            prompt = screen.query_one("#prompt", Input)
            assert prompt.value == "Where does Aya live?"
            await pilot.press("down")
            assert prompt.value == "draft"
            await quit_and_wait(pilot, loaded)


async def test_unreachable_endpoint_shows_a_notice_and_keeps_the_message(
    loaded_for: Callable[..., LoadedConfig], embedder: OnnxSentenceEmbedder
) -> None:
    with scripted_endpoint("error500") as (url, _):
        loaded = loaded_for(**{"llm.base_url": url})
        app = BrainApp(loaded)
        async with app.run_test(size=(100, 30)) as pilot:
            screen = app.screen
            assert isinstance(screen, ConversationScreen)
            await wait_for(lambda: screen.state in ("ready", "failed"), 60)
            await pilot.click("#prompt")
            await pilot.press(*"hello")
            await pilot.press("enter")
            await wait_for(lambda: views(screen, "notice"), 60)
            assert "HTTP 500" in views(screen, "notice")[-1].text
            await pilot.press(*"again")
            await pilot.press("enter")
            await wait_for(lambda: len(views(screen, "notice")) == 2, 60)
            await quit_and_wait(pilot, loaded)
    stores = open_stores(loaded.settings.data_dir, embedder, rate=False, core_memory_chars=1200)
    assert [m.text for m in stores.recall.recent(5)] == ["hello", "again"]  # kept
    stores.stream.close()


async def test_failed_start_keeps_the_typed_text_and_can_retry(
    loaded_for: Callable[..., LoadedConfig], tmp_path: Path
) -> None:
    missing = tmp_path / "missing.gguf"
    loaded = loaded_for(**{"llm.model_path": str(missing)})
    app = BrainApp(loaded)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, ConversationScreen)
        await wait_for(lambda: screen.state == "failed", 60)
        assert "does not exist" in status_text(screen)
        assert "Ctrl+R" in status_text(screen)
        await pilot.click("#prompt")
        await pilot.press(*"keep me")
        await pilot.press("enter")
        await pilot.pause()
        assert screen.query_one("#prompt", Input).value == "keep me"
        assert len(screen.query(MessageView)) == 0
        missing.write_bytes(b"not a gguf")
        await pilot.press("ctrl+r")
        await wait_for(lambda: "exited" in status_text(screen), 60)
        await quit_and_wait(pilot, loaded)


async def test_quitting_says_when_the_service_keeps_running(
    loaded_for: Callable[..., LoadedConfig],
) -> None:
    loaded = loaded_for(**{"llm.base_url": "http://127.0.0.1:9/v1", "service.background": "true"})
    app = BrainApp(loaded)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, ConversationScreen)
        await wait_for(lambda: screen.client is not None, 60)
        await pilot.press("ctrl+q")
    assert app.farewell is not None and "service.background = true" in app.farewell
    assert await stop(loaded) == 0


async def test_voice_in_the_window_state_keys_a_spoken_turn_and_a_cut_reply(
    loaded_for: Callable[..., LoadedConfig],
) -> None:
    """One service for every voice check: loading Whisper and Piper is most of the time."""
    reply = (
        "Going forward ten meters now. When I get there I will stop, look around, and wait "
        "for you to tell me what to do next."
    )
    with scripted_endpoint("stream", action(reply)) as (url, _):
        loaded = loaded_for(**{"llm.base_url": url, **HEADLESS_VOICE})
        app = BrainApp(loaded)
        async with app.run_test(size=(100, 30)) as pilot:
            screen = app.screen
            assert isinstance(screen, ConversationScreen)
            await wait_for(lambda: "listening" in voice_text(screen), 60)
            assert screen.query_one(LevelMeter).display
            palette = [command.title for command in app.get_system_commands(screen)]
            assert "Voice: Mute/unmute" in palette and "Voice: Talk" not in palette
            await pilot.press("f5")
            await wait_for(lambda: "muted" in voice_text(screen), 10)
            assert "f5 unmutes" in voice_text(screen)
            await pilot.press("f5")
            await wait_for(lambda: "listening" in voice_text(screen), 10)

            # A WAV spoken into the headless microphone, as `brain listen` does it.
            other = await ServiceClient.connect(loaded, "test")
            await other.send(Listen(path=str(GO_FORWARD)))
            await other.close()
            levels: set[int] = set()

            def spoken() -> bool:
                levels.add(screen.query_one(LevelMeter).eighths)
                return bool(views(screen, "user"))

            try:
                # Not a timing test: a loaded 2-core machine hears it far slower than an idle one.
                await wait_for(spoken, 90)
            except AssertionError as timed_out:
                log = (loaded.settings.log_dir / "service.log").read_text()[-4000:]
                raise AssertionError(f"never heard; the service's log:\n{log}") from timed_out
            [user] = views(screen, "user")
            assert "forward" in user.text.lower()
            assert user.note.startswith("🎤 ") and user.note.endswith("%")
            assert max(levels) > 0, "the meter moves while the user speaks"

            # The reply is read aloud (for several seconds); Escape cuts it off.
            await wait_for(lambda: views(screen, "assistant"), 30)
            [answer] = views(screen, "assistant")
            await wait_for(lambda: answer.border_subtitle, 30)  # the first sound went out
            timings = str(answer.border_subtitle)
            assert "stt" in timings and "sound" in timings and "words heard" in timings
            await wait_for(lambda: "speaking" in voice_text(screen), 10)
            await pilot.press("escape")
            await wait_for(lambda: answer.heard is not None, 10)
            await wait_for(lambda: not screen.replying, 10)
            assert answer.text.startswith("Going forward")
            assert "cut off here" in str(answer.render())

            await pilot.press("f6")
            await wait_for(lambda: "push to talk" in voice_text(screen), 10)
            await pilot.press("ctrl+t")
            await wait_for(lambda: "hearing you" in voice_text(screen), 10)
            await asyncio.sleep(0.5)
            await pilot.press("ctrl+t")  # half a second of silence: nothing to answer
            await wait_for(lambda: views(screen, "aside"), 20)
            assert "not heard" in views(screen, "aside")[0].text
            await pilot.press("f6")
            await wait_for(lambda: "listening" in voice_text(screen), 10)
            await quit_and_wait(pilot, loaded)


def test_the_cut_falls_after_the_last_word_heard() -> None:
    text = "Go **forward** ten meters. Then see [the map](https://x.org/m) and stop."
    assert text[: heard_end(text, "Go forward ten meters.")] == "Go **forward** ten meters."
    assert text[: heard_end(text, "Go forward ten meters. Then see the")] == (
        "Go **forward** ten meters. Then see [the"
    )
    assert heard_end(text, "") == 0
