"""MemGPT's main context (section 2.1): system instructions and core memory (the prefix), a
recursive summary of everything evicted, and a FIFO of recent messages with the memories
retrieved for each event; all counted against the model's context window.

Between compactions the prompt only grows: each prompt is the previous one plus what was said
and done since, so the llama.cpp server reuses its cached key/values for all of it. Nothing in
the FIFO is rewritten or moved; what changes later (core memory, a reply the user cut off) is
told in a note appended after it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from assistant.agent.core_memory import CoreMemory
from assistant.llm.client import Message
from assistant.llm.tokens import TokenCounter, estimate_tokens

# Chat templates add a few tokens around every message.
MESSAGE_OVERHEAD_TOKENS = 6


@dataclass(frozen=True)
class ContextConfig:
    window_tokens: int = 4096
    # Room kept free for the model's own reply.
    reply_tokens: int = 512
    # Share of the window at which the agent is warned to save what matters (memory pressure).
    warning_share: float = 0.7
    # Share at which, after a turn, the oldest evict_share is summarised in the background:
    # below the warning, so the summary (and the new prompt read ahead) is ready before the
    # window fills, even while the user leaves only seconds between turns.
    compact_share: float = 0.5
    # Share at which about evict_share of the FIFO is evicted into the summary.
    flush_share: float = 1.0
    evict_share: float = 0.5


class ContextWindow:
    def __init__(
        self,
        instructions: str,
        core: CoreMemory,
        config: ContextConfig = ContextConfig(),
        count: TokenCounter = estimate_tokens,
    ) -> None:
        self.instructions = instructions
        self.core = core
        self.config = config
        self.count = count
        self.summary = ""
        self.fifo: list[Message] = []
        # The memory-stream records each FIFO message shows (the record a user or assistant
        # message was stored as, the memories a retrieved block lists), so retrieval can leave
        # out what is already in view.
        self.shows: list[frozenset[str]] = []
        # Core memory as the prefix shows it, and each block as the model last saw it (in the
        # prefix or a note); the prefix changes only at an eviction, which rewrites the prompt
        # anyway.
        self.core_snapshot = ""
        self.core_seen: dict[str, str] = {}
        self._refresh_core()

    def prefix(self, core_snapshot: str | None = None) -> Message:
        """System instructions + core memory as it was at the last eviction: byte-stable
        between evictions, whatever edits core memory."""
        core = self.core_snapshot if core_snapshot is None else core_snapshot
        return {"role": "system", "content": f"{self.instructions}\n\n## Core memory\n{core}"}

    def messages(self) -> list[Message]:
        """The prompt: prefix, summary, the FIFO."""
        return self.prompt_with(self.summary, self.core_snapshot, self.fifo)

    def prompt_with(
        self, summary: str, core_snapshot: str, fifo: Sequence[Message]
    ) -> list[Message]:
        """The prompt the window makes of these parts (what it will send after a compaction)."""
        prompt = [self.prefix(core_snapshot)]
        if summary:
            prompt.append(
                {"role": "system", "content": f"Summary of earlier conversation:\n{summary}"}
            )
        prompt.extend(fifo)
        return prompt

    def tokens(self) -> int:
        return sum(self.count(m["content"]) + MESSAGE_OVERHEAD_TOKENS for m in self.messages())

    @property
    def budget(self) -> int:
        return max(self.config.window_tokens - self.config.reply_tokens, 1)

    def pressure(self) -> float:
        """How full the window is, 1.0 = no room left beside the reply."""
        return self.tokens() / self.budget

    def begin_event(
        self,
        message: Message,
        record_id: str | None = None,
        retrieved: str = "",
        shown: Iterable[str] = (),
    ) -> None:
        """Push the message of a new event, after the memories retrieved for it (``shown``:
        their record ids). Small models heed the last message most, so the event comes last;
        the memories stay in the FIFO with it, and are in view while they do."""
        if retrieved:
            self.push({"role": "system", "content": retrieved}, shows=shown)
        self.push(message, record_id)

    def push(
        self, message: Message, record_id: str | None = None, shows: Iterable[str] = ()
    ) -> None:
        self.fifo.append(message)
        self.shows.append(frozenset(shows) | ({record_id} if record_id is not None else set()))

    def in_view(self) -> set[str]:
        """The memory-stream records the FIFO shows."""
        return set[str]().union(*self.shows)

    def note_core_changes(self) -> None:
        """Append a note for each core-memory block changed since the model last saw it: the
        prefix keeps its snapshot, so the prompt so far stays as it was sent."""
        for label, block in self.core.blocks.items():
            before = self.core_seen.get(label, "")
            if block.value != before:
                self.core_seen[label] = block.value
                self.push({"role": "system", "content": core_note(label, before, block.value)})

    def eviction_count(self) -> int:
        """How many of the oldest messages an eviction takes: about evict_share of the FIFO's
        tokens, at least one, never the newest (0 with fewer than two messages)."""
        if len(self.fifo) < 2:
            return 0
        sizes = [self.count(m["content"]) + MESSAGE_OVERHEAD_TOKENS for m in self.fifo]
        target = self.config.evict_share * sum(sizes)
        taken, count = 0, 0
        while count < len(self.fifo) - 1 and (count == 0 or taken < target):
            taken += sizes[count]
            count += 1
        return count

    def evict(self) -> list[Message]:
        """Take the oldest messages (``eviction_count`` of them) off the FIFO and return
        them. The prompt is rewritten from here on, so the prefix takes up core memory as it
        is now."""
        count = self.eviction_count()
        if count == 0:
            return []
        evicted = self.fifo[:count]
        self._drop(count)
        return evicted

    def replace_oldest(
        self,
        summary: str,
        covers: Sequence[Message],
        core_snapshot: str,
        core_seen: dict[str, str],
    ) -> bool:
        """Swap in ``summary`` for the oldest messages, if they are still ``covers`` (a
        compaction made in the background), with the prefix showing core memory as it was
        when the compaction began (later edits are noted after it); False, and nothing
        changed, if they are not."""
        count = len(covers)
        if count < 1 or self.fifo[:count] != list(covers):
            return False
        self.summary = summary
        self.fifo = self.fifo[count:]
        self.shows = self.shows[count:]
        self.core_snapshot, self.core_seen = core_snapshot, dict(core_seen)
        return True

    def core_now(self) -> tuple[str, dict[str, str]]:
        """Core memory rendered for the prefix, and each block's value, as they are now."""
        return self.core.render(), {label: b.value for label, b in self.core.blocks.items()}

    def _drop(self, count: int) -> None:
        self.fifo = self.fifo[count:]
        self.shows = self.shows[count:]
        self._refresh_core()

    def _refresh_core(self) -> None:
        self.core_snapshot, self.core_seen = self.core_now()


def core_note(label: str, before: str, after: str) -> str:
    """What the model is told when a core-memory block changed from ``before`` to ``after``:
    the added line where one was appended, else the block's new text."""
    if not after:
        return f"[core memory] {label} is now empty"
    if not before or after.startswith(before + "\n"):
        return f"[core memory] added to {label}: {after[len(before) :].lstrip()}"
    return f"[core memory] {label} now reads:\n{after}"


def ahead_of_a_turn(messages: Sequence[Message]) -> list[Message]:
    """The prompt to have a server read ahead of the next turn: a placeholder message after
    it, so its last real message is read as the next turn will send it (closed, not left
    open for the model to continue)."""
    return [*messages, {"role": "user", "content": "…"}]


def transcript(messages: Sequence[Message]) -> str:
    return "\n".join(f"{m['role']}: {m['content']}" for m in messages)
