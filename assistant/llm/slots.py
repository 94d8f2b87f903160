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
from dataclasses import dataclass

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
