"""Reading ahead what the user is typing or saying before the turn comes: a draft's prompt is
read on the local server, and the words heard at a pause (or a typed sentence) have their
reply asked for at once (``Agent.prepare``, ``Agent.speculate``, docs/AGENT.md)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from assistant.protocol.conversation import MAX_SAY_CHARS
from assistant.service.jobs import Spawn
from assistant.service.llms import LLMs
from assistant.service.session import Opening

log = logging.getLogger(__name__)


class Drafts:
    def __init__(
        self, opening: Opening, llms: LLMs, busy: Callable[[], bool], spawn: Spawn
    ) -> None:
        """``busy``: a turn runs or waits (drafts are not read then)."""
        self.opening = opening
        self.llms = llms
        self.busy = busy
        self.spawn = spawn
        # A draft being read ahead (``read``), and the newest one that came meanwhile.
        self._drafting: asyncio.Task[bool] | None = None
        self._next_draft: str | None = None

    def read(self, text: str, speculate: bool = False) -> None:
        """Read a draft ahead while no turn runs or waits: one at a time, and of the drafts
        that come during a read only the newest is read next (a turn that starts meanwhile
        waits at most for the read under way to end). ``speculate``: the words heard at a
        pause in speech, or a typed draft that ends a sentence, likely the turn, whose reply
        is asked for at once (the next draft drops it)."""
        if self.busy():
            return
        if not text.strip() or len(text) > MAX_SAY_CHARS:
            return
        if speculate:
            # Not queued behind a read under way: the speculation's request is sent now, and
            # the server takes it as soon as that read ends (drafts queued before it are
            # older words).
            self._next_draft = None
            self.spawn(self._speculate(text))
            return
        if self._drafting is not None:
            self._next_draft = text
            return
        reading = asyncio.to_thread(self.read_ahead, text)
        self._drafting = asyncio.create_task(reading)
        self._drafting.add_done_callback(self._draft_done)

    def read_ahead(self, text: str, speculate: bool = False) -> bool:
        """In a worker thread: read a draft ahead, or (``speculate``) ask for its reply now,
        on the local server only (another endpoint would be billed for every pause in typing
        or speech)."""
        session = self.opening.session
        if session is None or not self.llms.local:
            return False
        return session.agent.speculate(text) if speculate else session.agent.prepare(text)

    async def _speculate(self, text: str) -> None:
        try:
            await asyncio.to_thread(self.read_ahead, text, True)
        except Exception as error:  # the turn asks for its reply itself
            log.warning("asking for the reply at a pause failed: %s", error)

    def _draft_done(self, task: asyncio.Task[bool]) -> None:
        self._drafting = None
        if not task.cancelled() and task.exception() is not None:
            log.warning("reading a draft ahead failed: %s", task.exception())
        newer, self._next_draft = self._next_draft, None
        if newer is not None:
            self.read(newer)
