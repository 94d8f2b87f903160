"""The first screen, driven by Textual's Pilot against the real local model."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from textual.widgets import Input

from assistant.llm.runtime import LLMRuntime
from assistant.model_paths import ProfileModels
from assistant.settings import Settings
from tests.conftest import make_settings
from tests.helpers.fake_openai import scripted_endpoint
from ui.app import BrainApp
from ui.screens.conversation import ConversationScreen
from ui.widgets.chat import MessageView


async def wait_for(condition: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        await asyncio.sleep(0.02)


@pytest.mark.slow
async def test_typed_question_gets_a_streamed_reply_from_the_local_model(
    fast_settings: Settings,
) -> None:
    app = BrainApp(fast_settings, LLMRuntime(fast_settings, ProfileModels(fast_settings)))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, ConversationScreen)
        assert "qwen2.5-coder-0.5b-instruct" in screen.sub_title
        await wait_for(lambda: screen.agent is not None, 180)
        assert "at http://127.0.0.1:" in screen.sub_title

        await pilot.click("#prompt")
        await pilot.press(*"Name three fruits, one per line.")
        await pilot.press("enter")
        await wait_for(lambda: len(screen.query(MessageView)) == 2, 5)
        reply = screen.query(MessageView).last()
        assert reply.role == "assistant"

        seen: set[str] = set()

        def finished() -> bool:
            if reply.text:
                seen.add(reply.text)
            return not screen.replying

        await wait_for(finished, 120)
        assert reply.text.strip()
        assert len(seen) > 2, "the reply should appear piece by piece"
        said = json.loads(screen.agent.context.fifo[-1]["content"])  # type: ignore[union-attr]
        assert said["tool"] == "send_message" and said["arguments"]["message"] == reply.text
        await pilot.press("ctrl+q")
    assert app.runtime.server is None, "quitting stops the local server"


async def test_unreachable_endpoint_shows_a_notice_and_keeps_running(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with scripted_endpoint("error500") as (url, _):
        settings = make_settings(
            "fast", tmp_path / "data", tmp_path / "cache", **{"llm.base_url": url}
        )
        app = BrainApp(settings)
        async with app.run_test(size=(100, 30)) as pilot:
            screen = app.screen
            assert isinstance(screen, ConversationScreen)
            await wait_for(
                lambda: (
                    screen.agent is not None
                    or "unavailable" in str(screen.query_one("#status-text").render())
                ),
                30,
            )
            await pilot.click("#prompt")
            await pilot.press(*"hello")
            await pilot.press("enter")
            await wait_for(lambda: any(v.role == "notice" for v in screen.query(MessageView)), 30)
            notice = [v for v in screen.query(MessageView) if v.role == "notice"][-1]
            assert "HTTP 500" in notice.text
            assert screen.stores is not None
            assert [m.text for m in screen.stores.recall.recent(5)] == ["hello"]  # kept
            await pilot.press(*"again")
            await pilot.press("enter")
            await wait_for(
                lambda: len([v for v in screen.query(MessageView) if v.role == "notice"]) == 2, 30
            )


async def test_failed_start_keeps_the_typed_text_and_can_retry(tmp_path) -> None:  # type: ignore[no-untyped-def]
    missing = tmp_path / "missing.gguf"
    settings = make_settings(
        "fast", tmp_path / "data", tmp_path / "cache", **{"llm.model_path": str(missing)}
    )
    app = BrainApp(settings)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, ConversationScreen)
        await wait_for(lambda: screen.startup_error is not None, 30)
        assert "does not exist" in screen.startup_error
        await pilot.click("#prompt")
        await pilot.press(*"keep me")
        await pilot.press("enter")
        await pilot.pause()
        assert screen.query_one("#prompt", Input).value == "keep me"
        assert len(screen.query(MessageView)) == 0
        missing.write_bytes(b"not a gguf")
        await pilot.press("ctrl+r")
        await wait_for(
            lambda: screen.startup_error is not None and "exited" in screen.startup_error, 60
        )
