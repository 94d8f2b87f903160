"""A small memory to browse and edit in tests, and what the scripted LLM was given."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from assistant.agent.tools import MEMORIES_HEAD
from assistant.config import LoadedConfig
from memory.embedder import Embedder
from memory.records import utc_now
from memory.stream import NewMemory
from tests.helpers.fake_openai import ScriptedEndpoint
from tests.memory_helpers import open_stream

FACTS = [
    "Ana lives in Porto.",
    "Pedro plays the cello in an orchestra.",
    "The dentist appointment is on Friday at 10.",
    "Joana prefers green tea to coffee.",
]
INSIGHT = "The user's friends are musical and live in Portugal."


def seed(
    loaded: LoadedConfig, embedder: Embedder, clock: Callable[[], datetime] = utc_now
) -> dict[str, str]:
    """The facts, and a reflection citing the first two; their ids by text."""
    stream = open_stream(loaded.settings.data_dir, embedder, clock=clock)
    added = stream.add_many([NewMemory(text, source="user", importance=4) for text in FACTS])
    ids = {record.text: record.id for record in added}
    insight = stream.add(
        INSIGHT,
        kind="reflection",
        source="assistant",
        importance=6,
        evidence=(ids[FACTS[0]], ids[FACTS[1]]),
    )
    ids[insight.text] = insight.id
    stream.close()
    return ids


def turn_messages(endpoint: ScriptedEndpoint) -> list[dict[str, object]]:
    """What the LLM was given for the agent's latest step (importance ratings, which go to
    the same endpoint, have no system prompt)."""
    return agent_requests(endpoint)[-1]


def agent_requests(endpoint: ScriptedEndpoint) -> list[list[dict[str, object]]]:
    found = []
    for request in endpoint.requests:
        messages = request["messages"]
        assert isinstance(messages, list)
        if messages and messages[0]["role"] == "system":
            found.append(messages)
    return found


def prompt_of(endpoint: ScriptedEndpoint) -> str:
    return "\n".join(str(m["content"]) for m in turn_messages(endpoint))


def retrieved(endpoint: ScriptedEndpoint) -> str:
    """The memories retrieved for the latest turn: the block just before the user's message,
    "" when there is none (the history still shows what was retrieved before)."""
    messages = turn_messages(endpoint)
    event = max(index for index, m in enumerate(messages) if m["role"] == "user")
    before = str(messages[event - 1]["content"])
    return before if before.startswith(MEMORIES_HEAD) else ""
