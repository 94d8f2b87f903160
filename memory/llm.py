"""What the memory package needs from a language model: structured replies. The assistant's
LLM client satisfies this; tests pass a scripted one. Any exception it raises counts as
'no answer' (the memory package cannot know the client's error types, by design).

This is memory's own narrow port, not the assistant's protocols (assistant/llm/protocols.py):
memory never imports the assistant, so its message is its own, of the same shape as the
assistant's plain ``TextMessage`` (the type checker matches the two by their keys)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypedDict

JsonSchema = dict[str, Any]


class Message(TypedDict):
    role: str
    content: str


class StructuredLLM(Protocol):
    def complete_json(
        self,
        messages: Sequence[Message],
        schema: JsonSchema,
        *,
        max_tokens: int | None = None,
        temperature: float | None = 0.0,
    ) -> dict[str, Any]:
        """A reply constrained to ``schema`` and parsed."""
