"""MemGPT's main context (section 2.1): system instructions and core memory (the prefix), and a
FIFO of recent messages with the memories retrieved for each event; all counted against the
model's context window. Evicted messages live on in a recursive summary.

The prompt only ever grows at its end, or loses its oldest messages: each prompt is the
previous one plus what was said and done since, so the llama.cpp server reuses its cached
key/values for all of it. Nothing in the FIFO is rewritten or moved; what changes later (core
memory, a reply the user cut off) is told in a note appended after it. A compaction removes the
oldest messages and appends the summary as a note at the end, rather than at the top: the
server shifts the cached key/values of the messages kept into place (``--cache-reuse``) and
reads only the note, where a changed top would have it read the whole window again (33 tokens
read instead of 981 in docs/BENCHMARKS.md). The prefix stays as it was sent; the note restates
the core memory blocks that changed since.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from assistant.agent.core_memory import CoreMemory
from assistant.llm.messages import Message
from assistant.llm.tokens import TokenCounter, estimate_tokens

# Chat templates add a few tokens around every message.
MESSAGE_OVERHEAD_TOKENS = 6
SUMMARY_HEAD = "[summary of the earlier conversation]"
# How the summary's note restates a core block that changed (after the summary itself).
CORE_RESTATED = "[core memory] "
# Who said a line of conversation the memory stream keeps (and the prompt shows among the
# memories), when the assistant did.
ASSISTANT_SPEAKER = "Brain OS"
USER_SPEAKER = "User"
# How the block of memories retrieved for an event opens.
MEMORIES_HEAD = "What you remember that may bear on this message"
# A compaction takes the oldest messages through the last summary note when that note lies in
# this share of the FIFO's tokens, so the old summary leaves view as the new one comes in.
THROUGH_SUMMARY_SHARE = 0.75


@dataclass(frozen=True)
class ContextConfig:
    window_tokens: int = 4096
    # Room kept free for the model's own reply.
    reply_tokens: int = 512
    # Share of the window at which the agent is warned to save what matters (memory pressure).
    warning_share: float = 0.7
    # Share at which, after a turn, the oldest evict_share is summarised in the background:
    # below the warning, so the summary is ready before the window fills, even while the user
    # leaves only seconds between turns.
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
        # The recursive summary of every message evicted so far (shown in its latest note).
        self.summary = ""
        self.fifo: list[Message] = []
        # The oldest messages handed to a summary being written in the background: out of
        # the prompt already (``hand_over``), summarised into the note that ``compact`` adds.
        self.pending: list[Message] = []
        # The memory-stream records each FIFO message shows (the record a user or assistant
        # message was stored as, the memories a retrieved block lists), so retrieval can leave
        # out what is already in view.
        self.shows: list[frozenset[str]] = []
        # Core memory as the prefix shows it (rendered, and each block's value), and each
        # block as the model last saw it (in the prefix or a note).
        self.core_snapshot = ""
        self.core_prefix: dict[str, str] = {}
        self.core_seen: dict[str, str] = {}
        self.core_snapshot, self.core_prefix = self.core_now()
        self.core_seen = dict(self.core_prefix)

    def prefix(self) -> Message:
        """System instructions + core memory as the window was begun: byte-stable, whatever
        edits core memory later (notes tell those)."""
        content = f"{self.instructions}\n\n## Core memory\n{self.core_snapshot}"
        return {"role": "system", "content": content}

    def messages(self) -> list[Message]:
        """The prompt: the prefix, then the FIFO."""
        return [self.prefix(), *self.fifo]

    def user_said(self) -> list[str]:
        """What the user said in the messages the window still holds, oldest first."""
        return [message["content"] for message in self.fifo if message["role"] == "user"]

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

    def also_shows(self, message: Message, record_id: str) -> None:
        """``message`` (the very object pushed) shows ``record_id`` too, while it is in the
        FIFO: its record was written after it was pushed."""
        for position, held in enumerate(self.fifo):
            if held is message:
                self.shows[position] = self.shows[position] | {record_id}
                return

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
        tokens, at least one, never the newest (0 with fewer than two messages), and through
        the last summary note where it is not among the newest messages."""
        if len(self.fifo) < 2:
            return 0
        sizes = [self.count(m["content"]) + MESSAGE_OVERHEAD_TOKENS for m in self.fifo]
        target = self.config.evict_share * sum(sizes)
        taken, count = 0, 0
        while count < len(self.fifo) - 1 and (count == 0 or taken < target):
            taken += sizes[count]
            count += 1
        notes = [i for i, m in enumerate(self.fifo[:-1]) if is_summary_note(m)]
        if notes and notes[-1] >= count:
            through = notes[-1] + 1
            if sum(sizes[:through]) <= THROUGH_SUMMARY_SHARE * sum(sizes):
                count = through
        return count

    def evict(self) -> list[Message]:
        """Take the oldest messages (``eviction_count`` of them) off the FIFO and return
        them; ``add_summary`` then tells the model what they said."""
        count = self.eviction_count()
        evicted = self.fifo[:count]
        self.fifo = self.fifo[count:]
        self.shows = self.shows[count:]
        return evicted

    def hand_over(self) -> list[Message]:
        """Take the oldest messages (``eviction_count`` of them, more until the window is below
        the compaction share) out of the prompt at once and hold them as ``pending`` for a
        summary written in the background: the prompt stays short however long the summary
        takes (on a CPU a turn's new tokens cost about twice as much to read after 8,000 tokens
        as after 3,000), and what they said is in recall storage meanwhile. Returns every pending
        message."""
        self.pending += self.evict_below(self.config.compact_share)
        return list(self.pending)

    def evict_below(self, share: float) -> list[Message]:
        """Evict (``evict``) once, and again while the window is still at ``share`` or more
        and there is something left to take; returns what was taken, oldest first."""
        evicted = self.evict()
        while evicted and self.pressure() >= share and (more := self.evict()):
            evicted += more
        return evicted

    def compact(
        self, summary: str, covers: Sequence[Message], before: Message | None = None
    ) -> bool:
        """Tell ``summary``, written of ``covers``, in a note where ``add_summary`` puts it,
        if those are still the oldest pending messages (those handed over since wait for the
        next summary); False, and nothing changed, if they are not (a blocking flush
        summarised them first)."""
        count = len(covers)
        if count < 1 or self.pending[:count] != list(covers):
            return False
        self.pending = self.pending[count:]
        self.add_summary(summary, before)
        return True

    def add_summary(self, summary: str, before: Message | None = None) -> None:
        """Make ``summary`` the running summary and tell it in a note: at the end, or just
        before the message ``before`` (``insert``; the event a turn is answering stays the
        last thing the model reads). The note also restates the core memory blocks
        that changed since the prefix was written: their earlier notes may have been evicted."""
        self.summary = summary
        lines = [f"{SUMMARY_HEAD}\n{summary}"]
        for label, block in self.core.blocks.items():
            if block.value != self.core_prefix.get(label, ""):
                lines.append(f"{CORE_RESTATED}{label} now reads:\n{block.value}")
                self.core_seen[label] = block.value
        self.insert({"role": "system", "content": "\n\n".join(lines)}, before)

    def insert(
        self, message: Message, before: Message | None = None, shows: Iterable[str] = ()
    ) -> None:
        """Push ``message`` just before ``before`` (the very object pushed), or at the end
        when that is not in the FIFO."""
        position = next((i for i, held in enumerate(self.fifo) if held is before), len(self.fifo))
        self.fifo.insert(position, message)
        self.shows.insert(position, frozenset(shows))

    def core_now(self) -> tuple[str, dict[str, str]]:
        """Core memory rendered for the prefix, and each block's value, as they are now."""
        return self.core.render(), {label: b.value for label, b in self.core.blocks.items()}


def is_summary_note(message: Message) -> bool:
    return message["role"] == "system" and message["content"].startswith(SUMMARY_HEAD)


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


def is_memories_note(message: Message) -> bool:
    return message["role"] == "system" and message["content"].startswith(MEMORIES_HEAD)


def transcript(messages: Sequence[Message]) -> str:
    """The messages as lines of text for a summary. Earlier summaries are left out (the
    summary so far is given on its own), and so are the memories retrieved for each message:
    they stay in the memory store, and summarised with the conversation they became part of
    it (with thousands of memories, the small model summarised other people's lives read in
    them as the user's)."""
    return "\n".join(
        f"{m['role']}: {m['content']}"
        for m in messages
        if not is_summary_note(m) and not is_memories_note(m)
    )
