"""The terminal app, driven by Textual's Pilot: a window onto a real `brain serve` process
(started by the app as a user's first window would), with the real local model or a scripted
endpoint."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Input

from assistant.agent.session import open_stores
from assistant.config import LoadedConfig
from assistant.service.paths import OwnerLock, socket_path
from assistant.service.terminal import ask, stop
from memory.embedder import OnnxSentenceEmbedder
from tests.conftest import make_loaded
from tests.helpers.fake_openai import scripted_endpoint
from tests.test_service import action
from ui.app import BrainApp
from ui.screens.conversation import ConversationScreen
from ui.widgets.chat import MessageView


async def wait_for(condition: Callable[[], object], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        await asyncio.sleep(0.02)


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


def views(screen: ConversationScreen, role: str) -> list[MessageView]:
    return [v for v in screen.query(MessageView) if v.role == role]


async def quit_and_wait(pilot: object, loaded: LoadedConfig) -> None:
    await pilot.press("ctrl+q")  # type: ignore[attr-defined]
    assert await asyncio.to_thread(OwnerLock(loaded.settings.data_dir).wait_free, 60)
    assert not socket_path(loaded.settings).exists(), "the service stopped with the window"


@pytest.mark.slow
async def test_typed_question_gets_a_streamed_reply_from_the_local_model(
    loaded_for: Callable[..., LoadedConfig], embedder: OnnxSentenceEmbedder
) -> None:
    loaded = loaded_for()
    app = BrainApp(loaded)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, ConversationScreen)
        assert "qwen2.5-coder-0.5b-instruct" in screen.sub_title
        await wait_for(lambda: screen.state == "ready", 240)
        assert "at http://127.0.0.1:" in screen.sub_title

        await pilot.click("#prompt")
        await pilot.press(*"Name three fruits, one per line.")
        await pilot.press("enter")
        await wait_for(lambda: len(views(screen, "assistant")) == 1, 30)
        reply = views(screen, "assistant")[0]

        seen: set[str] = set()

        def finished() -> bool:
            if reply.text:
                seen.add(reply.text)
            return not screen.replying

        await wait_for(finished, 120)
        assert reply.text.strip()
        assert len(seen) > 2, "the reply should appear piece by piece"
        await quit_and_wait(pilot, loaded)
    assert app.farewell is None
    stores = open_stores(loaded.settings.data_dir, embedder, None, 1200)
    said = [(m.role, m.text) for m in stores.recall.recent(5) if m.role != "tool"]
    assert said == [("user", "Name three fruits, one per line."), ("assistant", reply.text)]
    stores.stream.close()


async def test_a_turn_from_another_client_shows_in_the_window(
    loaded_for: Callable[..., LoadedConfig],
) -> None:
    with scripted_endpoint("stream", action("Ana lives in Lisbon.")) as (url, _):
        loaded = loaded_for(**{"llm.base_url": url})
        app = BrainApp(loaded)
        async with app.run_test(size=(100, 30)) as pilot:
            screen = app.screen
            assert isinstance(screen, ConversationScreen)
            await wait_for(lambda: screen.state == "ready", 60)
            answered = await ask(loaded, "Where does Ana live?")
            assert answered == 0
            await wait_for(lambda: views(screen, "assistant") and not screen.replying, 30)
            [user] = views(screen, "user")
            assert user.text == "Where does Ana live?" and user.note == "typed in ask"
            assert views(screen, "assistant")[0].text == "Ana lives in Lisbon."
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
    stores = open_stores(loaded.settings.data_dir, embedder, None, 1200)
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
