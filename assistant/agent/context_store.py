"""The context window on disk: the summary, the core memory the prefix shows and the FIFO as
it was sent, so after a restart the prompt is the same, byte for byte, as before it,
and the server's saved KV cache of it can be used (llama-server's slot file).

It is a cache of what recall storage holds in full: a missing, corrupt or foreign file is
logged and the window is rebuilt from recall instead, and nothing is lost.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, cast

from assistant.agent.context import SUMMARY_HEAD, ContextWindow
from assistant.llm.messages import Message

log = logging.getLogger(__name__)

# 2: the summary is a note in the FIFO, and the prefix's core memory is kept block by block.
FORMAT = 2


def save_context(path: Path, context: ContextWindow) -> None:
    """Write the window's state atomically (a crash leaves the old file or the new one)."""
    state = {
        "format": FORMAT,
        "instructions": context.instructions,
        "summary": context.summary,
        "core_snapshot": context.core_snapshot,
        "core_prefix": context.core_prefix,
        "core_seen": context.core_seen,
        "fifo": context.fifo,
        "pending": context.pending,
        "shows": [sorted(ids) for ids in context.shows],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_text(json.dumps(state, ensure_ascii=False), encoding="utf-8")
        os.replace(partial, path)
    except OSError as error:
        log.warning("could not save the context window to %s: %s", path, error)


def load_context(path: Path, context: ContextWindow) -> bool:
    """Put the saved state into ``context``; False (``context`` untouched) when there is none
    to use. Saved under other instructions (another version, other tools), the FIFO is kept
    but the prefix is rebuilt."""
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return False
    except (OSError, ValueError) as error:
        log.warning("the saved context window %s cannot be read (%s); rebuilding it", path, error)
        return False
    if not _valid(state):
        log.warning(
            "the saved context window %s is not one this version wrote; rebuilding it", path
        )
        return False
    context.summary = state["summary"]
    # Each one a message of strings (``_valid``), as it was saved.
    context.fifo = [cast(Message, dict(message)) for message in state["fifo"]]
    context.shows = [frozenset(ids) for ids in state["shows"]]
    context.pending = [cast(Message, dict(message)) for message in state.get("pending", [])]
    if state["format"] == 1:
        # The summary was shown above the FIFO: now a note at its head, under a new prefix.
        if context.summary:
            note: Message = {"role": "system", "content": f"{SUMMARY_HEAD}\n{context.summary}"}
            context.fifo.insert(0, note)
            context.shows.insert(0, frozenset())
    elif state["instructions"] == context.instructions:
        context.core_snapshot = state["core_snapshot"]
        context.core_prefix = dict(state["core_prefix"])
        context.core_seen = dict(state["core_seen"])
    return True


def _valid(state: Any) -> bool:
    if not isinstance(state, dict) or state.get("format") not in (1, FORMAT):
        return False
    fifo, shows, pending = state.get("fifo"), state.get("shows"), state.get("pending", [])
    blocks = [state.get("core_seen")] + ([state.get("core_prefix")] if state["format"] > 1 else [])
    return (
        isinstance(state.get("instructions"), str)
        and isinstance(state.get("summary"), str)
        and isinstance(state.get("core_snapshot"), str)
        and all(
            isinstance(values, dict) and all(isinstance(v, str) for v in values.values())
            for values in blocks
        )
        and isinstance(fifo, list)
        and isinstance(shows, list)
        and len(fifo) == len(shows)
        and isinstance(pending, list)
        and all(
            isinstance(m, dict)
            and isinstance(m.get("role"), str)
            and isinstance(m.get("content"), str)
            for m in [*fifo, *pending]
        )
        and all(isinstance(ids, list) and all(isinstance(i, str) for i in ids) for ids in shows)
    )
