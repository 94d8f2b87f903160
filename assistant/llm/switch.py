"""The LLM as the agent and background work hold it: whichever client is in use right now.

The service swaps the client when the endpoint in the config file changes, and has none while
the endpoint is starting or down; every request then fails with a one-line reason, the same
way an unreachable endpoint does, so the agent's retry and error paths cover it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

from assistant.llm.client import LLMCancelled, LLMClient, LLMUnavailable
from assistant.llm.messages import JsonSchema, TextMessage
from assistant.llm.tokens import estimate_tokens

# How often a request waiting for a client that is coming looks at its cancel event.
CANCEL_POLL_S = 0.1

Options = ParamSpec("Options")
Reply = TypeVar("Reply")


def _to_current(
    method: Callable[Concatenate[LLMClient, Options], Reply],
) -> Callable[Concatenate[SwitchableLLM, Options], Reply]:
    """``method`` of the client in use, with the client's own signature (so the type checker
    holds every caller to it, as if it were written out here)."""

    def call(switch: SwitchableLLM, /, *args: Options.args, **kwargs: Options.kwargs) -> Reply:
        return method(switch.current(), *args, **kwargs)

    return call


class SwitchableLLM:
    def __init__(self, reason: str = "the LLM is still starting") -> None:
        self._client: LLMClient | None = None
        self._reason = reason
        self._changed = threading.Condition()
        # While a client is coming, requests wait for it until this monotonic time.
        self._wait_until = 0.0

    def use(self, client: LLMClient) -> LLMClient | None:
        """Send every later request to ``client``; returns the one it replaces."""
        return self._set(client, self._reason)

    def unavailable(self, reason: str) -> LLMClient | None:
        """Fail every later request with ``reason``; returns the client taken out."""
        return self._set(None, reason)

    def coming(self, reason: str, wait_s: float) -> LLMClient | None:
        """Hold every later request until :meth:`use` or :meth:`unavailable` is called, for
        at most ``wait_s`` (then it fails with ``reason``); returns the client taken out."""
        return self._set(None, reason, time.monotonic() + wait_s)

    def _set(
        self, client: LLMClient | None, reason: str, wait_until: float = 0.0
    ) -> LLMClient | None:
        with self._changed:
            previous, self._client = self._client, client
            self._reason = reason
            self._wait_until = wait_until
            self._changed.notify_all()
        return previous

    @property
    def client(self) -> LLMClient | None:
        return self._client

    @property
    def tool_calling(self) -> str:
        """The current endpoint's way of calling tools (read by the agent every step)."""
        client = self._client
        return client.tool_calling if client is not None else "json_action"

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text`` as the current endpoint's model counts them (an estimate while
        there is none)."""
        client = self._client
        return client.count_tokens(text) if client is not None else estimate_tokens(text)

    def current(self, cancel: threading.Event | None = None) -> LLMClient:
        """The client in use, waited for while one is coming (``cancel`` ends the wait with
        :class:`LLMCancelled`)."""
        with self._changed:
            while self._client is None and (left := self._wait_until - time.monotonic()) > 0:
                if cancel is not None and cancel.is_set():
                    raise LLMCancelled("cancelled while the LLM was starting")
                self._changed.wait(min(left, CANCEL_POLL_S))
            if self._client is None:
                raise LLMUnavailable(self._reason)
            return self._client

    complete = _to_current(LLMClient.complete)
    stream = _to_current(LLMClient.stream)
    stream_tools = _to_current(LLMClient.stream_tools)

    def complete_json(
        self,
        messages: Sequence[TextMessage],
        schema: JsonSchema,
        *,
        max_tokens: int | None = None,
        temperature: float | None = 0.0,
        cancel: threading.Event | None = None,
    ) -> dict[str, Any]:
        """As the client's; ``cancel`` also ends the wait for a client that is coming."""
        return self.current(cancel).complete_json(
            messages, schema, max_tokens=max_tokens, temperature=temperature, cancel=cancel
        )
