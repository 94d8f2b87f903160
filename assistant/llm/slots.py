"""The conversation's KV cache on disk: llama-server saves its slot's cache to a file and reads
it back after a restart, so the first turn after a start reads only what is new instead of the
whole prompt again (seconds on 2 cores).

These are llama-server's own slot endpoints (``POST /slots/0?action=save|restore``), not
part of the OpenAI API, so they are called over plain HTTP (the standard library's: two calls
on the loopback need no client library). Every failure is logged and answered with False: a
missing or stale file only means the prompt is read again.
"""

from __future__ import annotations

import json
import logging
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from assistant.llm.client import LLMError, Message

log = logging.getLogger(__name__)

# One conversation a server: its only slot.
SLOT_ID = 0
# Saving writes the used cells only (about 12 KB a token on the fast model).
REQUEST_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class SlotResult:
    ok: bool
    tokens: int = 0
    seconds: float = 0.0


def slot_file_name(name: str, context_window: int, kv_cache_type: str) -> str:
    """A cache made for another model, window or cache type cannot be read back: each gets a
    file of its own (``name`` says what for and which model; llama-server takes a plain file
    name, no folders)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "model"
    return f"{safe}-{context_window}-{kv_cache_type}.bin"


class SlotCache:
    """Save and restore the conversation slot of the llama-server at ``base_url`` (its
    OpenAI URL, ``.../v1``) in the file ``file_name`` of the server's slot folder."""

    def __init__(self, base_url: str, file_name: str) -> None:
        self.root = base_url.removesuffix("/").removesuffix("/v1")
        self.file_name = file_name

    def save(self, file_name: str | None = None) -> SlotResult:
        return self._call("save", "n_saved", file_name or self.file_name)

    def restore(self, file_name: str | None = None) -> SlotResult:
        return self._call("restore", "n_restored", file_name or self.file_name)

    def _call(self, action: str, count_key: str, file_name: str) -> SlotResult:
        started = time.monotonic()
        request = urllib.request.Request(
            f"{self.root}/slots/{SLOT_ID}?action={action}",
            data=json.dumps({"filename": file_name}).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
                body = response.read()
        except urllib.error.HTTPError as error:
            # A first start has no file to restore: said at info level, not as a warning.
            log.info(
                "llama-server did not %s the conversation's KV cache (HTTP %d): %s",
                action,
                error.code,
                error.read()[:200].decode("utf-8", "replace"),
            )
            return SlotResult(False)
        except (OSError, TimeoutError) as error:
            log.info("could not %s the conversation's KV cache: %s", action, error)
            return SlotResult(False)
        try:
            tokens = int(json.loads(body).get(count_key, 0))
        except (ValueError, AttributeError):
            tokens = 0
        return SlotResult(True, tokens, time.monotonic() - started)


class PromptReader(Protocol):
    def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> str: ...


class PromptHandoff:
    """A prompt read by the background server, its KV cache handed to the conversation's.

    After a compaction the prompt changes near its start (a new summary), and everything after
    a change must be read again: llama-server's ``--cache-reuse`` shifts cached chunks into
    place only where text was removed, not where new text came in. So the background server
    (at idle priority: no reply slows down) reads the new prompt, saves its slot to a file in
    the folder both servers share, and at the turn boundary the conversation's server loads
    that file (milliseconds) instead of reading the prompt (seconds)."""

    def __init__(
        self,
        reader: PromptReader,
        background: SlotCache,
        conversation: SlotCache,
        exclusive: Callable[[], AbstractContextManager[object]],
        file_name: str,
    ) -> None:
        self.reader = reader
        self.background = background
        self.conversation = conversation
        # Holds other background requests off the background server between the read and
        # the save, which must find the slot holding this prompt.
        self.exclusive = exclusive
        self.file_name = file_name

    def prepare(self, messages: Sequence[Message]) -> bool:
        """Have the background server read ``messages`` and save what it read."""
        try:
            with self.exclusive():
                self.reader.complete(list(messages), max_tokens=1, temperature=0.0)
                return self.background.save(self.file_name).ok
        except LLMError as error:
            log.info("the background server could not read the compacted prompt: %s", error)
            return False

    def adopt(self) -> bool:
        """Load the prepared cache into the conversation's server."""
        restored = self.conversation.restore(self.file_name)
        if restored.ok:
            log.info(
                "the conversation's server took %d prepared tokens in %.3f s",
                restored.tokens,
                restored.seconds,
            )
        return restored.ok
