"""The heartbeat's look through the service: a tick with nothing new asks the LLM nothing; an
intention come due wakes the agent, whose message is said first, marked proactive, and kept
in the history a window is shown; with the user away, or after "not now", the agent is woken
but may not speak (real memory store and embedder; the LLM is a scripted endpoint)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest

from assistant.clients.connection import ServiceClient
from assistant.config import LoadedConfig
from assistant.protocol.conversation import ReplyEnd, ReplyStart, Say
from assistant.protocol.tasks import Tick
from assistant.service.session import Session
from tests.helpers.fake_openai import ScriptedEndpoint, scripted_endpoint
from tests.helpers.service import InProcess, action, until

ASKED = "How did Malin's recital go?"
DENTIST = "How was the dentist?"


def route(body: dict[str, Any]) -> str:
    messages = body.get("messages", [])
    last = str(messages[-1]["content"]) if messages else ""
    if "[heartbeat" in last:
        if "Nothing here needs the user" in last:
            return json.dumps(
                {"tool": "stay_quiet", "arguments": {"reason": "away"}, "request_heartbeat": False}
            )
        return json.dumps({"message": DENTIST if "dentist" in last else ASKED})
    return action("Noted.")


@pytest.fixture
def running(
    loaded_for: Callable[..., LoadedConfig], start_service: Callable[..., InProcess]
) -> Iterator[tuple[LoadedConfig, InProcess, ScriptedEndpoint]]:
    with scripted_endpoint("route", router=route) as (url, endpoint):
        loaded = loaded_for(
            **{"llm.base_url": url, "heartbeat.proactive": "true", "heartbeat.quiet_hours": ""}
        )
        yield loaded, start_service(loaded), endpoint


def heartbeat_requests(endpoint: ScriptedEndpoint) -> list[dict[str, Any]]:
    return [
        body for body in endpoint.requests if "[heartbeat" in json.dumps(body.get("messages", []))
    ]


async def session_of(service: InProcess) -> Session:
    session = await asyncio.wait_for(service.service.opening.wait(), 60)
    assert session is not None
    return session


async def ticked(client: ServiceClient, service: InProcess) -> None:
    """Tick now, and wait until the tick (and any heartbeat turn it queued) is over."""
    deadline = time.monotonic() + 30
    while (heartbeat := service.service.task_relay.heartbeat) is None:
        assert time.monotonic() < deadline, "the heartbeat did not start"
        await asyncio.sleep(0.1)
    before = heartbeat.ticks
    await client.send(Tick())
    while heartbeat.ticks == before or service.service.turns.busy:
        assert time.monotonic() < deadline, "the tick did not end"
        await asyncio.sleep(0.1)
    await asyncio.sleep(0.3)  # a queued heartbeat turn is seen as busy from here on


async def test_a_tick_with_nothing_new_asks_the_llm_nothing(
    running: tuple[LoadedConfig, InProcess, ScriptedEndpoint],
) -> None:
    loaded, service, endpoint = running
    client = await ServiceClient.connect(loaded, "tui", start=False)
    await session_of(service)
    await ticked(client, service)  # the first look: what was there before is not news
    await client.send(Say(text="I like green tea.", ref="s"))
    await until(client, lambda u: isinstance(u, ReplyEnd))
    await ticked(client, service)  # the new memory is news: the agent looks once
    assert len(heartbeat_requests(endpoint)) == 1
    asked = len(endpoint.requests)
    await ticked(client, service)
    await ticked(client, service)
    assert len(endpoint.requests) == asked, "nothing new: no request"
    await client.close()


async def test_a_due_intention_is_said_first_marked_and_kept_in_the_history(
    running: tuple[LoadedConfig, InProcess, ScriptedEndpoint],
) -> None:
    loaded, service, endpoint = running
    client = await ServiceClient.connect(loaded, "tui", start=False)
    session = await session_of(service)
    await ticked(client, service)  # the first look: what was there before is not news
    session.intentions.add("Ask how Malin's recital went", session.clock() - timedelta(minutes=1))
    await client.send(Tick())
    seen = await until(client, lambda u: isinstance(u, ReplyEnd))
    start = next(u for u in seen if isinstance(u, ReplyStart))
    assert start.proactive and seen[-1].text == ASKED  # type: ignore[union-attr]
    (request,) = heartbeat_requests(endpoint)
    assert "(your intention, due now) Ask how Malin's recital went" in json.dumps(request)
    assert session.intentions.due(session.clock()) == [], "brought back once"
    # A window opened later (before the first leaves: the last one out stops the service).
    again = await ServiceClient.connect(loaded, "tui-2", start=False)
    history = again.welcome.history
    assert [(h.text, h.proactive) for h in history] == [(ASKED, True)]
    await again.close()
    await client.close()


async def test_after_not_now_what_needs_the_user_waits_and_asks_the_llm_nothing(
    running: tuple[LoadedConfig, InProcess, ScriptedEndpoint],
) -> None:
    loaded, service, endpoint = running
    client = await ServiceClient.connect(loaded, "tui", start=False)
    session = await session_of(service)
    await ticked(client, service)
    session.intentions.add("Ask how Malin's recital went", session.clock() - timedelta(minutes=1))
    await client.send(Tick())
    await until(client, lambda u: isinstance(u, ReplyEnd) and u.text == ASKED)
    await client.send(Say(text="Not now, please.", ref="n"))
    await until(client, lambda u: isinstance(u, ReplyEnd))
    gate = service.service.proactive.gate
    assert gate is not None and "not now" in str(gate.blocked())
    session.intentions.add("Ask about the dentist", session.clock() - timedelta(minutes=1))
    asked = len(heartbeat_requests(endpoint))
    await ticked(client, service)
    await ticked(client, service)
    # The user's "Not now" is news (one quiet look at most); the intention waits, unasked.
    looks = heartbeat_requests(endpoint)[asked:]
    assert len(looks) <= 1 and "Ask about the dentist" not in json.dumps(looks)
    # Two hours later (the quiet is over), it is told.
    gate.ledger = gate.ledger.model_copy(update={"quiet_until": None})
    await client.send(Tick())
    await until(client, lambda u: isinstance(u, ReplyEnd) and u.text == DENTIST)
    await client.close()
