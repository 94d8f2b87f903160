"""The agent's tools (MemGPT's memory functions plus the scored retrieval): each has a pydantic
model of its arguments, from which the JSON schema the model is held to is made, and a function
that runs it and returns the text the model reads back."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from assistant.agent.context import MEMORIES_HEAD
from assistant.agent.core_memory import CoreMemory
from assistant.agent.focus import focused
from assistant.agent.told import RECALLED
from memory.archival import ArchivalChunk, ArchivalStore
from memory.graph.search import graph_search
from memory.graph.store import GraphStore
from memory.recall import RecallStore
from memory.records import MemoryRecord
from memory.stream import MemoryStream

PAGE_SIZE = 5
SNIPPET_CHARS = 300


class Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SendMessage(Arguments):
    message: str = Field(description="What to say to the user (it may be spoken aloud).")


class CoreMemoryAppend(Arguments):
    label: Literal["persona", "human"] = Field(description="The block to add to.")
    content: str = Field(description="The text to add, on a new line.")


class CoreMemoryReplace(Arguments):
    label: Literal["persona", "human"] = Field(description="The block to edit.")
    old_content: str = Field(description="Text exactly as it appears in the block.")
    new_content: str = Field(description="What replaces it (empty to delete it).")


class Search(Arguments):
    query: str = Field(description="Words or a question to look for.")
    page: int = Field(ge=1, description="Result page, 1 first.")


class ArchivalInsert(Arguments):
    content: str = Field(description="Text to keep for the long term (facts, notes, documents).")


class MemorySearch(Arguments):
    query: str = Field(description="What you want to remember.")


@dataclass(frozen=True)
class Stores:
    """What the tools work on."""

    core: CoreMemory
    stream: MemoryStream
    recall: RecallStore
    archival: ArchivalStore
    graph: GraphStore


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    arguments: type[Arguments]
    run: Callable[[Stores, Any], str]
    # It acts outside the memory store: the user allows each call before it runs.
    confirm: bool = False
    # Its result, when it succeeds, is what the user is told, word for word: no model step
    # after it (the small models answered a reminder just set with a refusal,
    # docs/BENCHMARKS.md, "Judgement").
    speaks_result: bool = False
    # Offered only at a heartbeat (heartbeat_tools): not in the instructions nor a turn's
    # schema, so a turn with the user reads the same prompt as before.
    tick_only: bool = False
    # Its arguments read by code from the user's words, when they hold all of them (None when
    # they do not): a call routed to it then needs no model step.
    read: Callable[[str], Arguments | None] | None = None

    def schema(self) -> dict[str, Any]:
        return strict_schema(self.arguments.model_json_schema())


def _send(stores: Stores, arguments: SendMessage) -> str:
    return "sent"


def _append(stores: Stores, arguments: CoreMemoryAppend) -> str:
    return stores.core.append(arguments.label, arguments.content)


def _replace(stores: Stores, arguments: CoreMemoryReplace) -> str:
    return stores.core.replace(arguments.label, arguments.old_content, arguments.new_content)


def _recall_search(stores: Stores, arguments: Search) -> str:
    found = stores.recall.search(arguments.query, page=arguments.page, page_size=PAGE_SIZE)
    lines = [
        f"[{m.at.isoformat(timespec='minutes')}] {m.role}: {_snippet(m.text)}" for m in found.items
    ]
    return "\n".join([f"recall: {found.describe()}", *lines])


def _archival_insert(stores: Stores, arguments: ArchivalInsert) -> str:
    chunks = stores.archival.insert(arguments.content, source="assistant")
    return f"stored in archival memory ({len(chunks)} chunk{'s' if len(chunks) != 1 else ''})"


def _archival_search(stores: Stores, arguments: Search) -> str:
    found = stores.archival.search(arguments.query, page=arguments.page, page_size=PAGE_SIZE)
    lines = [f"- {_snippet(hit.text)}" for hit in found.items]
    return "\n".join([f"archival: {found.describe()}", *lines])


def _memory_search(stores: Stores, arguments: MemorySearch) -> str:
    found = stores.stream.retrieve(arguments.query, k=PAGE_SIZE)
    if not found:
        return "no memories found"
    return "\n".join(describe_memory(m.record) for m in found)


def _graph_search(stores: Stores, arguments: MemorySearch) -> str:
    found = graph_search(stores.graph, arguments.query)
    if not found.triplets:
        return "no facts found"
    lines = ["facts (current first):", *(f"- {t.describe()}" for t in found.triplets)]
    episodes = [e.record_id for e in found.episodes]
    behind = stores.stream.get_many(episodes, embeddings=False)
    if behind:
        lines += ["memories behind them, best first:", *(describe_memory(r) for r in behind)]
    read = stores.archival.get_chunks(episodes)
    if read:
        lines += ["documents behind them, best first:", *(describe_chunk(c) for c in read)]
    return "\n".join(lines)


def describe_chunk(chunk: ArchivalChunk) -> str:
    return f"- ({chunk.title or 'a document'}) {_snippet(chunk.text)}"


def describe_memory(record: MemoryRecord) -> str:
    return f"- ({record.created_at.date().isoformat()}) {_snippet(record.text)}"


def memory_day(written: datetime, now: datetime) -> str:
    """The day a memory shown with an event was written, as the prompt says it: "today" and
    "yesterday" (two or three tokens where a date is twelve, and the model is told no date
    but these: it could not tell that a dated memory was today's), else its date."""
    day = written.astimezone().date()  # the user's day, not UTC's
    days = (now.astimezone().date() - day).days
    return {0: "today", 1: "yesterday"}.get(days, day.isoformat())


# A grounded message whose answer is not known opens so and goes on to say what it does not
# know (the whole message, as a grammar's pattern: no quote inside).
UNKNOWN_PATTERN = "^I don't know,? [a-z][^\"]*$"
# An answer that says what the user told of what it asks (told.RECALLED).
RECALLING_PATTERN = f'^{RECALLED} [a-z][^"]*$'
# A message asked for at once (a poem, a story: routing.py): its lines may break, and it may not
# end on a comma or a colon. Held to a plain JSON string, the 1.5B model closed the string
# where it wanted a line break, so a short poem ended after its first line, on a comma; a raw
# line break inside the string is read (actions.py). Nor may it end on a line break: a first
# line ending in a comma and a line break was closed there.
COMPOSED_PATTERN = r'^[^"]*[^",:; \t\n\r]$'


def memories_block(records: Sequence[MemoryRecord], about: str, now: datetime) -> str:
    """The memories retrieved at ``now`` for an event saying ``about``, as the prompt shows
    them ("" for none), each cut to what bears on it (focus.py)."""
    if not records:
        return ""
    lines = [f"- ({memory_day(r.created_at, now)}) {focused(r.text, about)}" for r in records]
    # Said to be all the model knows: told only that they were "relevant", the 1.5B model
    # made up what they lacked (a name, a time).
    return f"{MEMORIES_HEAD} (what is not here or in the conversation, you do not know):\n" + (
        "\n".join(lines)
    )


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET_CHARS else text[: SNIPPET_CHARS - 1] + "…"


TOOLS: tuple[Tool, ...] = (
    Tool(
        "send_message",
        "Say something to the user. Ends your turn unless request_heartbeat is true.",
        SendMessage,
        _send,
    ),
    Tool(
        "core_memory_append",
        "Add a lasting fact to a core memory block (always in your prompt).",
        CoreMemoryAppend,
        _append,
    ),
    Tool(
        "core_memory_replace",
        "Change or delete text in a core memory block.",
        CoreMemoryReplace,
        _replace,
    ),
    Tool(
        "recall_search",
        "Search every past message of the conversation, including ones no longer in view.",
        Search,
        _recall_search,
    ),
    Tool(
        "archival_insert",
        "Store text in archival memory for the long term.",
        ArchivalInsert,
        _archival_insert,
    ),
    Tool("archival_search", "Search archival memory.", Search, _archival_search),
    Tool(
        "memory_search",
        "Search your memory stream (observations, reflections, plans, facts), best first.",
        MemorySearch,
        _memory_search,
    ),
    Tool(
        "graph_search",
        "Search the facts learnt about people, places and things (and how they changed), "
        "with the memories they came from.",
        MemorySearch,
        _graph_search,
    ),
)


def by_name(tools: Sequence[Tool] = TOOLS) -> dict[str, Tool]:
    return {tool.name: tool for tool in tools}


def strict_schema(schema: dict[str, Any], descriptions: bool = False) -> dict[str, Any]:
    """A pydantic schema as a grammar-friendly, strict JSON schema: no titles (nor
    descriptions, unless asked for), every property required, no extra properties, in
    declaration order."""
    dropped = ("title",) if descriptions else ("title", "description")
    properties = {
        name: {k: v for k, v in spec.items() if k not in dropped}
        for name, spec in schema["properties"].items()
    }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def action_schema(
    tools: Sequence[Tool] = TOOLS, grounded: bool = False, opening: str | None = None
) -> dict[str, Any]:
    """The one JSON object the model writes per step: a message to the user as
    ``{"message": ...}``, or which tool, its arguments, and whether it wants another step
    after this one (MemGPT's request_heartbeat).

    A message has the short form so its first word comes after 4 tokens, not the 14 of
    ``{"tool": "send_message", "arguments": {"message": "`` (about 0.4 s of writing on the
    fast model, measured in docs/BENCHMARKS.md); speaking ends the step sequence (small models
    asked for another step after a message and said the same thing again).

    ``grounded`` (the answer to a question): the message says first whether what the model
    knows holds the answer, ``{"known": true, "message": ...}``, and a ``false`` holds the
    message to open with "I don't know". Asked that smaller question first, the 1.5B model
    admitted most of the unknowns it had made up answers to (a name, a time), and still
    answered those it knew (docs/BENCHMARKS.md, "Judgement").

    ``opening``: a pattern the message is held to (after a refusal: checks/opening.py)."""
    shapes = []
    for tool in tools:
        if tool.name == "send_message":
            message = tool.schema()["properties"]["message"]
            if opening is not None:
                message = message | {"pattern": opening}
            if not grounded:
                shapes.append(_object({"message": message}))
                continue
            unknown = message | {"pattern": UNKNOWN_PATTERN}
            shapes.append(_object({"known": {"const": True}, "message": message}))
            shapes.append(_object({"known": {"const": False}, "message": unknown}))
            continue
        shapes.append(
            {
                "type": "object",
                "properties": {
                    "tool": {"const": tool.name},
                    "arguments": tool.schema(),
                    "request_heartbeat": {"type": "boolean"},
                },
                "required": ["tool", "arguments", "request_heartbeat"],
                "additionalProperties": False,
            }
        )
    return {"anyOf": shapes}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def native_tools(tools: Sequence[Tool] = TOOLS) -> list[dict[str, Any]]:
    """The tools as native function definitions (the chat-completions ``tools``): each one's
    arguments plus MemGPT's boolean ``request_heartbeat``. Plain types only (no ``const``):
    endpoints differ in how much JSON schema they accept."""
    specs = []
    for tool in tools:
        parameters = strict_schema(tool.arguments.model_json_schema(), descriptions=True)
        parameters["properties"]["request_heartbeat"] = {
            "type": "boolean",
            "description": (
                "Always false: a message ends your turn."
                if tool.name == "send_message"
                else "true to take another step after this one (e.g. to answer with what it found)."
            ),
        }
        parameters["required"].append("request_heartbeat")
        specs.append(
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": parameters,
                },
            }
        )
    return specs


def describe_tools(tools: Sequence[Tool] = TOOLS) -> str:
    """The tools as the system prompt lists them."""
    lines = []
    for tool in tools:
        fields = tool.arguments.model_fields
        arguments = ", ".join(
            f"{name}: {field.description or ''}".strip() for name, field in fields.items()
        )
        lines.append(f"- {tool.name}({arguments}): {tool.description}")
    return "\n".join(lines)
