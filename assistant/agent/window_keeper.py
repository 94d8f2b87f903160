"""Keeping the context window within its budget: the model warned as it fills, the oldest
messages summarised in the background and swapped out at a turn's end (or evicted into a
summary at once when a turn finds it full), the window saved after each turn, and the prompt
read ahead so the next turn reads only what is new."""

from __future__ import annotations

import logging
import threading
from contextlib import nullcontext
from pathlib import Path

from assistant.agent.compaction import (
    SUMMARY_WORDS,
    CompactionStart,
    Compactor,
    opening_lines,
    summarise,
)
from assistant.agent.context import ContextWindow, ahead_of_a_turn
from assistant.agent.context_store import save_context
from assistant.llm.client import LLMCancelled, LLMError
from assistant.llm.messages import Message
from assistant.llm.priority import ForegroundGate
from assistant.llm.protocols import AgentLLM

log = logging.getLogger(__name__)

# How long a turn whose window filled waits for the background summary under way, before it
# writes one itself.
COMPACTION_WAIT_S = 120.0


class WindowKeeper:
    def __init__(
        self,
        context: ContextWindow,
        llm: AgentLLM,
        compactor: Compactor | None = None,
        context_path: Path | None = None,
        gate: ForegroundGate | None = None,
    ) -> None:
        """``gate``: told when a turn waits on the background server (it is not paused then)."""
        self.context = context
        self.llm = llm
        self.gate = gate or ForegroundGate()
        # Summarises the oldest messages off the reply path (None: only the blocking flush).
        self.compactor = compactor
        if compactor is not None:
            compactor.on_ready = self._compaction_ready
        # Where the window is saved after each turn, to be the same after a restart.
        self.context_path = context_path
        # Held while the window changes: a turn, a note, a compaction swapped in.
        self.lock = threading.RLock()
        # A swapped-in summary's note is read ahead at once (set where the LLM is local).
        self.reads_ahead = False
        # Set from the first draft of a message read ahead until the message's turn ends.
        self.drafting = False
        # Summaries swapped in from the background so far.
        self.compactions = 0
        self._warned = False

    def warn_if_full(self) -> None:
        """Warn the model once the window passes warning_share (once until a compaction)."""
        pressure = self.context.pressure()
        if pressure >= self.context.config.warning_share and not self._warned:
            self._warned = True
            self.context.push(
                {
                    "role": "system",
                    "content": (
                        f"[memory pressure] The conversation fills {pressure:.0%} of your "
                        "context window. Older messages will soon be replaced by a summary: "
                        "save anything important with core_memory_append or archival_insert."
                    ),
                }
            )

    def manage_pressure(self, before: Message | None) -> bool:
        """At flush_share, inside a turn: swap in the background summary under way (waited
        for), else evict into a summary written now; what is added goes ``before`` the
        event's message. Returns whether the window was made smaller."""
        flush_share = self.context.config.flush_share
        if self.context.pressure() < flush_share:
            return False
        if self.finish_compaction(before) and self.context.pressure() < flush_share:
            return True
        return self.flush(before)

    def finish_compaction(self, before: Message | None) -> bool:
        """The window filled before the background summary was done: wait for it (while the
        turn waits, the cores are the background server's) and swap it in before the event."""
        compactor = self.compactor
        if compactor is None or not compactor.busy:
            return False
        with self.gate.background_needed():
            if not compactor.wait(COMPACTION_WAIT_S):
                return False
        return self.swap_in_compaction(before)

    def flush(self, before: Message | None) -> bool:
        """Evict about half the FIFO (more if the prompt still would not be under the
        warning share) into a new recursive summary, its note ``before`` the event."""
        # Pending messages first: the flush's summary takes over from the one under way.
        evicted = [
            *self.context.pending,
            *self.context.evict_below(self.context.config.warning_share),
        ]
        self.context.pending = []
        if not evicted:
            return False
        # On the background server where there is one: the conversation's keeps its cache.
        ask = self.compactor.ask if self.compactor is not None else self._ask_summary
        apart = self.gate.background_needed() if self.compactor is not None else nullcontext()
        with apart:
            try:
                summary = summarise(ask, self.context.summary, evicted)
            except LLMCancelled:
                # Evicted already: what they said is kept as their opening lines.
                summary = opening_lines(self.context.summary, evicted)
        self.context.add_summary(summary, before=before)
        self._warned = False
        log.info("evicted %d messages into the summary", len(evicted))
        return True

    def _ask_summary(self, prompt: list[Message]) -> str:
        return self.llm.complete(prompt, max_tokens=SUMMARY_WORDS * 2, temperature=0.0)

    # Compaction off the reply path

    def after_turn(self) -> None:
        """The reply is out: a summary that finished during the turn (or while the user wrote
        its message) goes in, the window is saved, and its oldest part is handed to a summary
        if that is due; a prompt so changed is read ahead while the user reads the reply."""
        held = len(self.context.fifo)
        swapped = self.swap_in_compaction(save=False)
        self.compact_if_due()
        if self.context_path is not None:
            save_context(self.context_path, self.context)
        # A summary only started changes nothing in the prompt: nothing to read again.
        if (swapped or len(self.context.fifo) != held) and self.reads_ahead:
            threading.Thread(target=self.read_ahead, name="read-ahead", daemon=True).start()

    def compact_if_due(self) -> bool:
        """Hand the window's oldest part over to be summarised if it has filled past the
        compaction share (after a turn; and at start, for a window saved full), even while a
        summary is under way (the next one takes it), and start a summary of what waits for
        one. Whether the prompt got shorter or a summary started."""
        compactor = self.compactor
        if compactor is None:
            return False
        with self.lock:
            context = self.context
            # Saved with the window after the turn; at start, a window saved full is handed
            # over again if the service stops before then.
            handed = context.pressure() >= context.config.compact_share
            if handed:
                context.hand_over()
            if compactor.busy or not context.pending:
                return handed
            covers = tuple(context.pending)
            return compactor.start(CompactionStart(previous=context.summary, covers=covers))

    def swap_in_compaction(self, before: Message | None = None, save: bool = True) -> bool:
        """Put a finished summary in place of the messages it covers (the caller holds the
        window), its note before ``before`` if given, and save the window (unless ``save`` is
        false: the caller saves it next). A summary of messages no longer at the head of the
        FIFO (a blocking flush came first) is dropped."""
        compactor = self.compactor
        done = compactor.take() if compactor is not None else None
        if compactor is None or done is None:
            return False
        if not self.context.compact(done.summary, done.start.covers, before):
            log.info("a background summary was overtaken by a flush; dropped")
            return False
        self._warned = False
        self.compactions += 1
        if save and self.context_path is not None:
            save_context(self.context_path, self.context)
        log.info("swapped in a summary of %d messages", len(done.start.covers))
        return True

    def _compaction_ready(self) -> None:
        """A summary is done: swapped in now, and its note read ahead so the next turn need
        not read it, if the window is free and the user is not writing the next message
        (its drafts were read ahead against the window as it is); else at the end of the next
        turn, once its reply is out. (The next summary, if the window is still past the
        share, starts after the next turn: chained here, a background server that failed
        every request would have turned the whole window into fallback summaries at once.)"""
        if self.drafting or not self.lock.acquire(blocking=False):
            return
        try:
            swapped = self.swap_in_compaction()
        finally:
            self.lock.release()
        if swapped and self.reads_ahead:
            self.read_ahead()

    def read_ahead(self) -> str | None:
        """Have the conversation's server read the prompt as it stands (its cache then holds
        it, and the next turn reads only what is new): one token asked, after a placeholder
        message so the last real one is read as the next turn will send it. Returns why it
        could not, or None."""
        with self.lock:
            prompt = ahead_of_a_turn(self.context.messages())
        try:
            self.llm.complete(prompt, max_tokens=1, temperature=0.0)
        except LLMError as error:
            log.info("could not read the prompt ahead: %s", error)
            return str(error)
        return None
