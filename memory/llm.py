"""What the memory package needs from a language model: structured replies. The assistant's
LLM client satisfies this; tests pass a scripted one. Any exception it raises counts as
'no answer' (the memory package cannot know the client's error types, by design)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

Message = dict[str, str]
JsonSchema = dict[str, Any]


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
