"""The day plan through the service: made at start by the heartbeat, broken into hours,
re-planned when the user names a time today and on request from the plans pane (real memory
store and embedder; the LLM is a scripted endpoint that plans from the real clock)."""

from __future__ import annotations

import asyncio
import json
import re
import time as time_module
from collections.abc import Callable, Iterator
from datetime import datetime, time, timedelta
from typing import Any

import pytest

from assistant.clients.connection import ServiceClient
from assistant.config import LoadedConfig
from assistant.protocol.conversation import ReplyEnd, Say
from assistant.protocol.memory import MemoryPage, MemoryQuery
from assistant.protocol.tasks import PlanDay, PlanDone
from assistant.tasks.reminders import local_now
from tests.helpers.fake_openai import scripted_endpoint
from tests.helpers.service import InProcess, action, until
from tests.helpers.ui import wait_for
from ui.app import BrainApp
from ui.screens.plans import PlansScreen
from ui.widgets.memory_table import MemoryTable


def spans(count: int, words: str, window: tuple[str, str] | None = None) -> dict[str, Any]:
    """``count`` chunks named ``words`` and their number, dividing ``window`` (HH:MM to HH:MM;
    by default from this minute to midnight)."""
    now = local_now().replace(second=0, microsecond=0)
    first, last = now, now.replace(hour=23, minute=59)
    if window is not None:
        first, last = (
            datetime.combine(now.date(), time.fromisoformat(t), now.tzinfo) for t in window
        )
    size = max(1, int((last - first).total_seconds() // 60) // count)
    chunks = []
    for index in range(count):
        start = first + timedelta(minutes=index * size)
        end = start + timedelta(minutes=size)
        chunks.append(
            {"start": f"{start:%H:%M}", "end": f"{end:%H:%M}", "what": f"{words} {index + 1}"}
        )
    return {"chunks": chunks}


def route(body: dict[str, Any]) -> str:
    messages = body.get("messages", [])
    last = str(messages[-1]["content"]) if messages else ""
    if '"chunks"' in json.dumps(body.get("response_format") or {}):
        if "smaller chunks" in last:
            window = re.search(r"covering (\d\d:\d\d) to (\d\d:\d\d)", last)
            assert window is not None
            return json.dumps(spans(2, "Step", (window[1], window[2])))
        if "needs revising" in last:
            return json.dumps(spans(5, "Revised"))
        return json.dumps(spans(5, "Block"))
    return action("Noted.")


@pytest.fixture
def loaded(
    loaded_for: Callable[..., LoadedConfig], start_service: Callable[..., InProcess]
) -> Iterator[LoadedConfig]:
    now = local_now()
    if now > now.replace(hour=23, minute=50):  # the plan needs some day left: start tomorrow's
        time_module.sleep((now.replace(hour=23, minute=59, second=59) - now).total_seconds() + 2)
    with scripted_endpoint("route", router=route) as (url, _):
        routed = loaded_for(**{"llm.base_url": url, "tasks.day_plan": "true"})
        # Something to plan from: a user the planner knows nothing about gets no plan unasked.
        routed.settings.data_dir.mkdir(parents=True, exist_ok=True)
        (routed.settings.data_dir / "core_memory.json").write_text(
            json.dumps({"version": 1, "blocks": {"human": "Rik finishes a report today."}})
        )
        start_service(routed)
        yield routed


async def plan_texts(client: ServiceClient) -> list[str]:
    await client.send(MemoryQuery(ref="q", kinds=["plan"], page_size=100))
    page = (await until(client, lambda u: isinstance(u, MemoryPage)))[-1]
    assert isinstance(page, MemoryPage)
    return [row.text for row in page.rows]


async def eventually(client: ServiceClient, test: Callable[[list[str]], bool]) -> list[str]:
    deadline = asyncio.get_running_loop().time() + 30
    while True:
        texts = await plan_texts(client)
        if test(texts):
            return texts
        assert asyncio.get_running_loop().time() < deadline, texts
        await asyncio.sleep(0.3)


async def test_the_day_is_planned_at_start_and_replanned_when_a_time_is_named(
    loaded: LoadedConfig,
) -> None:
    client = await ServiceClient.connect(loaded, "tui", start=False)
    # The heartbeat's first tick plans the day, then breaks the current chunk into hours.
    texts = await eventually(client, lambda t: sum("Step" in x for x in t) == 2)
    assert sum("Block" in x for x in texts) == 5
    today = f"{datetime.now().astimezone():%a %d %b}"
    assert all(t.startswith(f"Plan for {today}, ") for t in texts)

    await client.send(Say(text="The dentist moved to 4 pm today.", ref="s"))
    await until(client, lambda u: isinstance(u, ReplyEnd))
    # The old chunks go once the new ones are stored.
    await eventually(
        client,
        lambda t: sum("Revised" in x for x in t) == 5 and not any("Block" in x for x in t),
    )

    await client.send(PlanDay(ref="p", action="replan"))
    done = (await until(client, lambda u: getattr(u, "ref", None) == "p", timeout=30))[-1]
    assert isinstance(done, PlanDone) and done.text.startswith("re-planned the rest of the day")
    await client.close()


async def test_the_plans_pane_breaks_a_chunk_down(loaded: LoadedConfig) -> None:
    app = BrainApp(loaded)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(lambda: app.conversation.link.client is not None, 30)
        await pilot.press("f3")
        pane = app.screen
        assert isinstance(pane, PlansScreen)
        table = pane.query_one(MemoryTable)

        async def shown(test: Callable[[list[str]], bool]) -> None:
            for _ in range(60):
                pane.load()
                await pilot.pause(0.5)
                if test([row.text for row in table.memories.values()]):
                    return
            raise AssertionError([row.text for row in table.memories.values()])

        await shown(lambda texts: sum("Block" in t for t in texts) == 5)
        # In the day's order, not newest first.
        blocks = [t.rsplit(": ", 1)[1] for t in (r.text for r in table.memories.values())]
        assert [b for b in blocks if b.startswith("Block")] == [f"Block {n}" for n in range(1, 6)]
        before = pane.total
        await pilot.press("b")
        await shown(lambda texts: pane.total > before)
        await pilot.press("ctrl+q")
