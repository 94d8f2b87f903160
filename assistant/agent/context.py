"""MemGPT's main context (section 2.1): system instructions and core memory (the byte-stable
prefix), a recursive summary of everything evicted, a FIFO of recent messages, and the memories
retrieved for the current event; all counted against the model's context window."""

from __future__ import annotations

from collections.abc import Sequence
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
        # The memory-stream record each FIFO message was stored as (None: not stored there),
        # so retrieval can leave out what is already in view.
        self.record_ids: list[str | None] = []
        # Where the event being handled starts in the FIFO: its retrieved memories go just
        # before it (small models heed the last message most; the event should be it).
        self.event_start = 0

    def prefix(self) -> Message:
        """System instructions + core memory: unchanged between turns unless core memory is."""
        return {
            "role": "system",
            "content": f"{self.instructions}\n\n## Core memory\n{self.core.render()}",
        }

    def messages(self, retrieved: str = "") -> list[Message]:
        """The prompt: prefix, summary, the FIFO, with the memories retrieved for the current
        event just before the event (so the steps of one event share everything before them,
        and the next event only drops them)."""
        prompt = [self.prefix()]
        if self.summary:
            prompt.append(
                {"role": "system", "content": f"Summary of earlier conversation:\n{self.summary}"}
            )
        prompt.extend(self.fifo[: self.event_start])
        if retrieved:
            prompt.append({"role": "system", "content": retrieved})
        prompt.extend(self.fifo[self.event_start :])
        return prompt

    def tokens(self, retrieved: str = "") -> int:
        return sum(
            self.count(m["content"]) + MESSAGE_OVERHEAD_TOKENS for m in self.messages(retrieved)
        )

    @property
    def budget(self) -> int:
        return max(self.config.window_tokens - self.config.reply_tokens, 1)

    def pressure(self, retrieved: str = "") -> float:
        """How full the window is, 1.0 = no room left beside the reply."""
        return self.tokens(retrieved) / self.budget

    def begin_event(self, message: Message, record_id: str | None = None) -> None:
        """Push the message of a new event: what is retrieved for it goes before it."""
        self.event_start = len(self.fifo)
        self.push(message, record_id)

    def push(self, message: Message, record_id: str | None = None) -> None:
        self.fifo.append(message)
        self.record_ids.append(record_id)

    def in_view(self) -> set[str]:
        """The memory-stream records whose messages are in the FIFO."""
        return {record_id for record_id in self.record_ids if record_id is not None}

    def evict(self) -> list[Message]:
        """Take the oldest messages, about evict_share of the FIFO's tokens (at least one,
        never the newest), off the FIFO and return them."""
        if len(self.fifo) < 2:
            return []
        sizes = [self.count(m["content"]) + MESSAGE_OVERHEAD_TOKENS for m in self.fifo]
        target = self.config.evict_share * sum(sizes)
        taken, count = 0, 0
        while count < len(self.fifo) - 1 and (count == 0 or taken < target):
            taken += sizes[count]
            count += 1
        evicted, self.fifo = self.fifo[:count], self.fifo[count:]
        self.record_ids = self.record_ids[count:]
        self.event_start = max(self.event_start - count, 0)
        return evicted


def transcript(messages: Sequence[Message]) -> str:
    return "\n".join(f"{m['role']}: {m['content']}" for m in messages)
