"""What the agent keeps of a conversation as it happens: every event, reply and tool call in
recall storage before it is acted on (nothing acknowledged is lost if the process dies), and
the user's and the assistant's messages in the memory stream as observations: the user's once
the model's first token is in (deferred.py), so the embedding and the near-copy check do not
hold up the prompt."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from assistant.agent.context import ASSISTANT_SPEAKER, USER_SPEAKER, ContextWindow
from assistant.agent.deferred import Deferred
from assistant.agent.events import Event, from_user
from assistant.agent.tools import Stores, memories_block
from assistant.agent.turn import INTERRUPTED
from assistant.llm.messages import Message
from memory.importance import small_talk
from memory.records import MemoryRecord
from memory.stream import MemoryRequestError

log = logging.getLogger(__name__)


class Journal:
    def __init__(
        self,
        stores: Stores,
        context: ContextWindow,
        window: threading.RLock,
        conversation_id: str = "main",
    ) -> None:
        self.stores = stores
        self.context = context
        # Held while the window changes (window_keeper.py): a note pushed between turns takes it.
        self._window = window
        self.conversation_id = conversation_id
        # The messages said in the last turn, and the memory-stream record of each, for a
        # barge-in to mark what was not heard.
        self._said: list[tuple[str, str | None]] = []
        # The message of the event being answered (what a flush adds goes before it).
        self.event_message: Message | None = None
        # The user's message of this turn and the memory-stream record being written for it.
        self._observing: tuple[Message, Deferred[str | None]] | None = None

    def record_event(
        self, event: Event, prompt: str, shown: Sequence[MemoryRecord], known: str = ""
    ) -> None:
        """Begin the event in the window (after the memories ``shown`` for it, and ``known``,
        what the user told of themselves that bears on it) and keep it."""
        self._said = []
        block = memories_block(shown, prompt, self.stores.stream.now())
        retrieved = "\n".join(part for part in (block, known) if part)
        ids = [record.id for record in shown]
        if from_user(event):
            # The one write the prompt waits for: the words are kept if the process dies.
            self.write_recall("user", prompt)
            message: Message = {"role": "user", "content": prompt}
            self.context.begin_event(message, None, retrieved, ids)
            self._observing = (message, Deferred(lambda: self.observe("user", prompt)))
        else:
            self.context.begin_event({"role": "system", "content": prompt}, None, retrieved, ids)
            self.write_recall("system", prompt)
        self.event_message = self.context.fifo[-1]

    def first_token(self) -> None:
        """The model's reply has begun: the user's message goes into the memory stream now."""
        if self._observing is not None:
            self._observing[1].start()

    def observed(self) -> None:
        """Wait for the user's message to be in the memory stream (started now if the model
        gave no token), and let the window know its record."""
        if self._observing is None:
            return
        (message, observation), self._observing = self._observing, None
        record_id = observation.result()
        if record_id is not None:
            self.context.also_shows(message, record_id)

    def said(self, message: str) -> str | None:
        """Keep ``message``, said this turn (into recall storage and the memory stream);
        returns its stream record's id."""
        record_id = self.remember("assistant", message)
        self._said.append((message, record_id))
        return record_id

    def remember(self, role: str, text: str) -> str | None:
        """Into recall storage and, as an observation, into the memory stream; returns the
        stream record's id."""
        self.write_recall(role, text)
        return self.observe(role, text)

    def observe(self, role: str, text: str) -> str | None:
        """Into the memory stream as an observation; returns the record's id, or None for
        small talk, which recall storage keeps verbatim: a greeting by name or "You're
        welcome!" in the stream is retrieved for any question that names that person, in place
        of a memory that says something."""
        if small_talk(text):
            return None
        name = USER_SPEAKER if role == "user" else ASSISTANT_SPEAKER
        try:
            return self.stores.stream.add(f"{name}: {text}", source=role).id
        except (ValueError, MemoryRequestError, OSError) as error:
            log.warning("could not add to the memory stream: %s", error)
            return None

    def write_recall(self, role: str, text: str) -> None:
        """Append to recall storage, the verbatim history (a failure is logged)."""
        try:
            self.stores.recall.append(role, text, conversation_id=self.conversation_id)
        except (ValueError, OSError) as error:
            log.warning("could not add to recall storage: %s", error)

    def note(self, prompt: str) -> None:
        """A note for the agent's next turn, with no reply now: into the window and recall
        storage."""
        with self._window:
            self.context.push({"role": "system", "content": prompt})
        self.write_recall("system", prompt)

    def heard_only(self, heard: str) -> None:
        """The last reply was spoken and the user cut in: only ``heard`` reached their ears.

        The history gets a note of what was heard, so the model does not assume the user knows
        the rest (the reply itself stays as it was sent: the prompt only grows); the memory
        stream's record of each message not heard whole is edited to what was (its change
        history keeps the full text); recall storage keeps the reply as written and the note.
        """
        left = heard.split()
        for message, record_id in self._said:
            # Counted in words: what was heard is the speakable form (markup read out).
            count = len(message.split())
            kept, left = " ".join(left[:count]), left[count:]
            if len(kept.split()) == count or record_id is None:
                continue
            text = kept + INTERRUPTED if kept else "(interrupted before it was heard)"
            try:
                self.stores.stream.edit(record_id, text=f"Brain OS: {text}")
            except (ValueError, MemoryRequestError, OSError) as error:
                log.warning("could not mark the interrupted reply in memory: %s", error)
        if heard.strip():
            note = f"[the user interrupted the spoken reply; they heard only: {heard!r}]"
        else:
            note = "[the user interrupted the spoken reply before hearing any of it]"
        self.note(note)
