"""The one way Brain OS talks to a language model: the ``openai`` client, with clear errors.

Every failure becomes an :class:`LLMError` whose message is one line a user can act on.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import openai

from assistant.llm.cancellable import cancellable
from assistant.llm.messages import (
    JsonSchema,
    Message,
    StreamDelta,
    TextDelta,
    TextMessage,
    ToolCallDelta,
    ToolSpec,
)
from assistant.llm.tokens import TokenCounter, estimate_tokens
from assistant.settings import JsonMode, ToolCalling

# Tokens a repeated run may have before the DRY sampler (``no_repeat``) penalises it.
DRY_ALLOWED = 4


class LLMError(Exception):
    """The LLM could not answer; the message says why in one line."""


class LLMUnavailable(LLMError):
    """The endpoint cannot be reached, refused the request, or timed out."""


class LLMReplyError(LLMError):
    """The endpoint answered, but not with what was asked for (e.g. invalid JSON); ``reply``
    is what it wrote, where there was text."""

    def __init__(self, message: str, reply: str = "") -> None:
        super().__init__(message)
        self.reply = reply


class LLMContextOverflow(LLMError):
    """The prompt did not fit the model's context window."""


class LLMCancelled(LLMError):
    """The caller cancelled the request before the reply was complete."""


# How servers word a prompt that is too long (llama.cpp, OpenAI, vLLM).
_OVERFLOW_WORDS = (
    "context window",
    "context length",
    "context size",
    "maximum context",
    "too many tokens",
)


@dataclass(frozen=True)
class PromptReading:
    """How much of a request's prompt the server read anew and how much it took from its
    cache (llama-server says so in its reply's ``timings``; other servers do not)."""

    read: int
    cached: int
    # Tokens drafted from the prompt (llama-server's lookup decoding) and how many were kept.
    drafted: int = 0
    accepted: int = 0


@dataclass(frozen=True)
class Endpoint:
    base_url: str
    model: str
    api_key: str | None = None
    is_local: bool = False

    @property
    def label(self) -> str:
        return f"{self.model} at {self.base_url}"


class LLMClient:
    def __init__(
        self,
        endpoint: Endpoint,
        timeout_s: float = 120.0,
        json_mode: JsonMode = "auto",
        tool_calling: ToolCalling = "auto",
        count_tokens: TokenCounter = estimate_tokens,
        no_repeat: float = 0.0,
    ) -> None:
        self.endpoint = endpoint
        # The DRY sampler's multiplier for a local server (0: off): long runs of words already
        # in the prompt (an earlier reply, the user's own words) grow less likely to be written.
        self.no_repeat = no_repeat
        # How the endpoint's model counts a text, for the context window: exact for the local
        # model (its vocabulary), an estimate that errs high for others.
        self.count_tokens = count_tokens
        self.timeout_s = timeout_s
        self.json_mode: JsonMode = json_mode
        if json_mode == "auto":
            self.json_mode = "json_object_schema" if endpoint.is_local else "json_schema"
        # The local llama.cpp server ignores tool_choice="auto": its tools are driven through
        # a schema-held JSON action instead (the agent reads this).
        self.tool_calling: ToolCalling = tool_calling
        if tool_calling == "auto":
            self.tool_calling = "json_action" if endpoint.is_local else "native"
        # The last streamed request's prompt reading, where the server reports it.
        self.last_reading: PromptReading | None = None
        self._client = openai.OpenAI(
            base_url=endpoint.base_url,
            # Local servers and some proxies need no key, but the client insists on one.
            api_key=endpoint.api_key or "not-needed",
            timeout=timeout_s,
            max_retries=1,
        )

    def close(self) -> None:
        self._client.close()

    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> str:
        """One whole reply as text."""
        self.last_reading = None
        response = self._create(messages, max_tokens=max_tokens, temperature=temperature)
        self.last_reading = _reading(response)
        return _content(response)

    def complete_json(
        self,
        messages: Sequence[TextMessage],
        schema: JsonSchema,
        *,
        max_tokens: int | None = None,
        temperature: float | None = 0.0,
        cancel: threading.Event | None = None,
    ) -> dict[str, Any]:
        """A reply constrained to ``schema`` where the endpoint supports it, parsed. With
        ``cancel``, the reply streams and setting ``cancel`` abandons it at once (the HTTP
        stream is closed, so the server stops writing) with :class:`LLMCancelled`."""
        request_messages: list[TextMessage] = list(messages)
        if self.json_mode == "json_object":
            request_messages.append(
                {"role": "system", "content": "Reply with JSON matching: " + json.dumps(schema)}
            )
        options: dict[str, Any] = {
            "max_tokens": max_tokens,
            "temperature": temperature,
            "response_format": self._response_format(schema),
        }
        if cancel is None:
            text = _content(self._create(request_messages, **options))
        else:
            deltas = cancellable(self._deltas(request_messages, **options), cancel)
            text = "".join(delta.content or "" for delta in deltas)
            if cancel.is_set():
                raise LLMCancelled(f"the request to {self.endpoint.label} was cancelled")
        try:
            # strict=False: a small model writes raw newlines inside strings (valid to read).
            value = json.loads(text, strict=False)
        except json.JSONDecodeError as error:
            raise LLMReplyError(
                f"{self.endpoint.label} did not reply with valid JSON ({error.msg} at "
                f"character {error.pos}): {_clip(text)}",
                reply=text,
            ) from None
        if not isinstance(value, dict):
            raise LLMReplyError(f"{self.endpoint.label} replied with JSON that is not an object")
        return value

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        schema: JsonSchema | None = None,
        grammar: str | None = None,
        no_repeat: float | None = None,
    ) -> Iterator[str]:
        """The reply, piece by piece, as the model writes it (held to ``schema`` if given; to
        the GBNF ``grammar`` where the server is the local llama-server, which takes one, and
        with its DRY sampler at ``no_repeat`` instead of the client's own)."""
        for delta in self._deltas(
            messages,
            grammar=grammar,
            no_repeat=no_repeat,
            max_tokens=max_tokens,
            temperature=temperature,
            response_format=self._response_format(schema) if schema is not None else None,
        ):
            if delta.content:
                yield delta.content

    def stream_tools(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Iterator[StreamDelta]:
        """The reply with native tool calling offered (``tool_choice="auto"``), piece by piece:
        plain content and tool-call fragments, as the model writes them."""
        for delta in self._deltas(
            messages,
            max_tokens=max_tokens,
            temperature=temperature,
            tools=list(tools),
            tool_choice="auto",
        ):
            if delta.content:
                yield TextDelta(delta.content)
            for call in delta.tool_calls or ():
                function = call.function
                yield ToolCallDelta(
                    index=call.index if isinstance(call.index, int) else 0,
                    id=call.id or None,
                    name=(function.name or None) if function else None,
                    arguments=(function.arguments or "") if function else "",
                )

    def ping(self) -> list[str]:
        """The model names the endpoint offers (also proves it is reachable)."""
        try:
            return [model.id for model in self._client.models.list()]
        except openai.APIError as error:
            raise self._describe(error) from None

    def _deltas(
        self,
        messages: Sequence[TextMessage],
        grammar: str | None = None,
        no_repeat: float | None = None,
        **options: Any,
    ) -> Iterator[Any]:
        """The streamed reply's deltas (the first choice's), failures described."""
        self.last_reading = None
        if self.endpoint.is_local:
            # llama-server then reports its prompt reading in every chunk, not only the last,
            # so a reply the agent closes early (a loop, an ungrounded sentence) is measured too.
            extra = {"timings_per_token": True, **self._sampling(no_repeat)}
            options["extra_body"] = {**extra, "grammar": grammar} if grammar else extra
        chunks = self._create(messages, stream=True, **options)
        try:
            for chunk in chunks:
                self.last_reading = _reading(chunk) or self.last_reading
                if chunk.choices:
                    yield chunk.choices[0].delta
        except openai.APIError as error:
            raise self._describe(error) from None
        finally:
            chunks.close()

    def _sampling(self, no_repeat: float | None = None) -> dict[str, Any]:
        """llama-server's sampling options beyond the OpenAI ones (the DRY sampler at
        ``no_repeat``, else at the client's own)."""
        multiplier = self.no_repeat if no_repeat is None else no_repeat
        if not multiplier:
            return {}
        # A run of up to DRY_ALLOWED tokens (a name, "lives in") is free to repeat; the penalty
        # grows with each token past it (the server's default: over the whole prompt).
        return {
            "dry_multiplier": multiplier,
            "dry_base": 1.75,
            "dry_allowed_length": DRY_ALLOWED,
        }

    def _response_format(self, schema: JsonSchema) -> dict[str, Any]:
        if self.json_mode == "json_object_schema":
            return {"type": "json_object", "schema": schema}
        if self.json_mode == "json_schema":
            return {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": schema, "strict": True},
            }
        return {"type": "json_object"}

    def _create(self, messages: Sequence[TextMessage], **options: Any) -> Any:
        arguments = {key: value for key, value in options.items() if value is not None}
        try:
            return self._client.chat.completions.create(
                model=self.endpoint.model,
                messages=cast(Any, list(messages)),
                **arguments,
            )
        except openai.APIError as error:
            raise self._describe(error) from None
        except RuntimeError:
            # httpx's error for a request made after close(): the runtime stopped or switched
            # the LLM while background work (a summary's read-ahead) still held this client.
            if not self._client.is_closed():
                raise
            raise LLMUnavailable(f"the LLM client for {self.endpoint.base_url} is closed") from None

    def _describe(self, error: openai.APIError) -> LLMError:
        where = self.endpoint.base_url
        if isinstance(error, openai.APITimeoutError):
            return LLMUnavailable(
                f"the LLM at {where} did not answer within {self.timeout_s:.0f} s"
            )
        if isinstance(error, openai.APIConnectionError):
            cause = error.__cause__ or error.__context__
            reason = f" ({_clip(str(cause), 120)})" if cause else ""
            return LLMUnavailable(f"cannot reach the LLM at {where}{reason}")
        if isinstance(error, openai.AuthenticationError):
            return LLMUnavailable(f"the LLM at {where} rejected the API key (HTTP 401)")
        if isinstance(error, openai.NotFoundError):
            return LLMUnavailable(
                f"the LLM at {where} does not know model {self.endpoint.model!r} (HTTP 404)"
            )
        if isinstance(error, openai.APIStatusError):
            reason = _reason(error)
            if error.status_code in (400, 413, 500) and any(
                words in reason.lower() for words in _OVERFLOW_WORDS
            ):
                return LLMContextOverflow(
                    f"the prompt does not fit the context window of the LLM at {where}: "
                    f"{_clip(reason)}"
                )
            return LLMUnavailable(
                f"the LLM at {where} answered HTTP {error.status_code}: {_clip(_reason(error))}"
            )
        return LLMError(f"the LLM at {where} failed: {_clip(str(error))}")


def _reason(error: openai.APIStatusError) -> str:
    """The server's own words when it sent a JSON error body, else the client's summary."""
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    return error.message


def _content(response: Any) -> str:
    try:
        content = response.choices[0].message.content
    except (AttributeError, IndexError, TypeError):
        raise LLMReplyError("the LLM sent a reply with no message in it") from None
    return content or ""


def _reading(response: Any) -> PromptReading | None:
    """What llama-server says it read for a response (or a streamed chunk) in its timings."""
    timings = (getattr(response, "model_extra", None) or {}).get("timings")
    if isinstance(timings, dict) and "prompt_n" in timings:
        return PromptReading(
            int(timings["prompt_n"]),
            int(timings.get("cache_n", 0)),
            int(timings.get("draft_n", 0)),
            int(timings.get("draft_n_accepted", 0)),
        )
    return None


def _clip(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
