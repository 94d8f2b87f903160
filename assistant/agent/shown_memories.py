"""The memories shown with an event: retrieved for it from the memory stream (those the window
shows already left out), or carried from its drafts read ahead (draft_memories.py)."""

from __future__ import annotations

import logging

from assistant.agent.context import MESSAGE_OVERHEAD_TOKENS, ContextWindow
from assistant.agent.draft_memories import DraftMemories
from assistant.agent.tools import Stores, memories_block
from assistant.agent.turn import SURE_MEMORIES, AgentConfig
from assistant.llm.messages import Message
from memory.records import MemoryRecord
from memory.stream import MemoryRequestError

log = logging.getLogger(__name__)


class ShownMemories:
    def __init__(self, stores: Stores, context: ContextWindow, config: AgentConfig) -> None:
        self.stores = stores
        self.context = context
        self.config = config
        # The memories read ahead with the drafts of the message being written (``prepare``).
        self._drafts = DraftMemories(config.retrieved_memories)

    def for_draft(self, text: str) -> tuple[MemoryRecord, ...]:
        """The memories to show with ``text``, a draft of the message being written."""
        return self._drafts.for_draft(text, frozenset(self.context.in_view()), self.rank)

    def prepared_for(self, prompt: str) -> list[MemoryRecord] | None:
        """The memories to show with ``prompt`` carried from its drafts read ahead, if any
        were and nothing in view changed since (then the server has read most of the prompt);
        marked as used now."""
        shown = self._drafts.for_message(prompt, frozenset(self.context.in_view()), self.rank)
        if shown is None:
            return None
        ids = [record.id for record in shown]
        if ids:
            try:
                self.stores.stream.mark_accessed(ids)
            except (ValueError, MemoryRequestError, OSError) as error:
                log.warning("could not mark the prepared memories as used: %s", error)
        return shown

    def rank(self, prompt: str, wanted: int) -> list[MemoryRecord]:
        """The ``wanted`` memories most worth showing for a message not yet sent."""
        return self.retrieve(prompt, touch=False, wanted=wanted)

    def retrieve(
        self, prompt: str, touch: bool = True, wanted: int | None = None
    ) -> list[MemoryRecord]:
        """The memories most worth showing for this event (``wanted``, else as configured),
        leaving out those the FIFO shows already (their messages, or an earlier event's
        retrieved memories)."""
        wanted = self.config.retrieved_memories if wanted is None else wanted
        if wanted < 1:
            return []
        in_view = self.context.in_view()
        try:
            found = self.stores.stream.retrieve(
                prompt,
                k=wanted + len(in_view),
                weights=self.config.retrieval_weights,
                touch=touch,
            )
        except (ValueError, MemoryRequestError, OSError) as error:
            log.warning("memory retrieval failed: %s", error)
            return []
        config = self.config
        near = [
            m
            for m in found
            if m.similarity >= config.least_similarity and m.record.id not in in_view
        ]
        return [
            m.record
            for rank, m in enumerate(near[:wanted])
            if rank < SURE_MEMORIES or m.similarity >= config.more_similarity
        ]

    def show_again(self, prompt: str, before: Message | None) -> None:
        """After a flush inside a turn: memories for the event that were left out as in
        view, and were evicted with the messages that showed them, are shown before it
        (``before``, the event's message)."""
        shown = self.retrieve(prompt, touch=False)
        context = self.context
        room = context.config.flush_share * context.budget - context.tokens() - 1
        now = self.stores.stream.now()
        while (
            shown
            and context.count(memories_block(shown, prompt, now)) + MESSAGE_OVERHEAD_TOKENS > room
        ):
            shown.pop()  # the least relevant first: what fits is shown
        if shown:
            message: Message = {"role": "system", "content": memories_block(shown, prompt, now)}
            ids = [record.id for record in shown]
            context.insert(message, before=before, shows=ids)
