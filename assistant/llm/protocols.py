"""What the assistant's parts need from a language model, each as one small protocol.

``LLMClient`` (client.py) has them all; ``SwitchableLLM`` (switch.py) passes them on to the
client in use; ``BackgroundLLM`` (priority.py) has the structured requests of background work;
tests pass scripted ones. A failed request raises ``LLMError`` (client.py). The memory package
has its own port, ``memory.llm.StructuredLLM``, since memory never imports the assistant.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

from assistant.llm.messages import JsonSchema, Message, StreamDelta, TextMessage, ToolSpec


@runtime_checkable
class CountsTokens(Protocol):
    def count_tokens(self, text: str) -> int: ...


class AgentLLM(Protocol):
    """What the master agent talks with: a reply streamed (held to ``schema`` or a GBNF
    ``grammar`` if given; ``no_repeat``: how strongly runs of words already in the prompt are
    kept from being written again, where the server can), or one whole."""

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        schema: JsonSchema | None = None,
        grammar: str | None = None,
        no_repeat: float | None = None,
    ) -> Iterator[str]: ...

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> str: ...


@runtime_checkable
class ToolCallingLLM(AgentLLM, Protocol):
    """An LLM that can also offer the tools as native tool calls (``LLMClient``). Whether it
    does is ``tool_calling`` ("native" or "json_action"), read every step, so it may change
    while the agent runs; any other ``AgentLLM`` is driven through the JSON action."""

    @property
    def tool_calling(self) -> str: ...

    def stream_tools(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Iterator[StreamDelta]: ...


class CancellableJsonLLM(Protocol):
    """Structured replies that ``cancel`` abandons at once (``LLMCancelled``): background
    work and delegated tasks."""

    def complete_json(
        self,
        messages: Sequence[TextMessage],
        schema: JsonSchema,
        *,
        max_tokens: int | None = None,
        temperature: float | None = 0.0,
        cancel: threading.Event | None = None,
    ) -> dict[str, Any]: ...
