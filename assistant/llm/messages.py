"""What goes to a language model and what comes back from it, typed: the chat messages of a
prompt (with room for native tool calls), and the pieces of a streamed reply.

Messages are TypedDicts, so they are the very JSON objects the ``openai`` client sends and the
context window saves (context_store.py): nothing converts them on the way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypedDict

JsonSchema = dict[str, Any]
# One tool as the chat-completions API takes it: {"type": "function", "function": {...}}.
ToolSpec = dict[str, Any]


class ToolCallFunction(TypedDict):
    name: str
    # The call's arguments as the JSON text the model wrote.
    arguments: str


class ToolCall(TypedDict):
    """A native tool call an assistant message made (the chat-completions API's shape)."""

    id: str
    type: Literal["function"]
    function: ToolCallFunction


class TextMessage(TypedDict):
    """A message of plain text: all a structured (JSON) request is made of. Memory's port
    (memory/llm.py) has its own of the same shape, since memory never imports the assistant."""

    role: str
    content: str


class Message(TextMessage, total=False):
    """A message of a prompt: ``role`` is "system", "user", "assistant" or "tool"; an
    assistant message may carry the tool calls it made, and a "tool" message answers one."""

    tool_calls: list[ToolCall]
    tool_call_id: str


@dataclass(frozen=True)
class TextDelta:
    """A piece of the reply's plain content."""

    text: str


@dataclass(frozen=True)
class ToolCallDelta:
    """A piece of a native tool call: the call's index in the reply, its id and name (in the
    first piece, usually), and the next fragment of its JSON arguments."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


StreamDelta = TextDelta | ToolCallDelta
