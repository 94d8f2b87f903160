"""Reading the user's message before it is sent: at each pause while they write or speak, the
memories its draft would show are retrieved and the conversation's server reads the prompt
the turn would send; at the pause that likely ends a spoken turn, the turn's first request is
sent at once and its reply written ahead (speculation.py), for the turn to take over."""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Mapping

from assistant.agent.context import ContextWindow
from assistant.agent.shown_memories import ShownMemories
from assistant.agent.speculation import Request, Speculation, Tally
from assistant.agent.step_request import StepRequests, form_for
from assistant.agent.tools import Tool, memories_block
from assistant.agent.window_keeper import WindowKeeper
from assistant.llm.client import LLMError
from assistant.llm.messages import Message
from assistant.llm.priority import ForegroundGate
from assistant.llm.protocols import AgentLLM

log = logging.getLogger(__name__)


class Drafting:
    def __init__(
        self,
        llm: AgentLLM,
        context: ContextWindow,
        window: WindowKeeper,
        memories: ShownMemories,
        requests: StepRequests,
        tools: Mapping[str, Tool],
        gate: ForegroundGate,
    ) -> None:
        self.llm = llm
        self.context = context
        self.window = window
        self.memories = memories
        self.requests = requests
        self.tools = tools
        self.gate = gate
        # Drafts in the order they arrived, and the newest one whose prompt was made; held
        # while a draft's prompt is made and its speculation replaced.
        self._order = itertools.count()
        self._made = -1
        self._lock = threading.Lock()
        # The reply asked for at the user's last pause, until a turn takes it or drops it.
        self._speculation: Speculation | None = None
        self.speculated = Tally()

    def prepare(self, text: str) -> bool:
        """The user has paused while writing ``text`` (a draft, or speech still being
        recognised): retrieve its memories and have the conversation's server read the prompt
        the turn would send, so if that is what comes, the turn reads almost nothing new. The
        window is not changed and nothing is recorded; a different message later only wastes
        the read. False if a turn is under way (it is not disturbed)."""
        arrived = next(self._order)
        with self._lock:
            ahead = self._draft_prompt(text, arrived)
            if ahead is None:
                return False
            self.drop()  # the user went on speaking: it was not the turn
        try:
            self.llm.complete(ahead, max_tokens=1, temperature=0.0)
        except LLMError as error:
            log.info("could not read the draft ahead: %s", error)
        return True

    def speculate(self, text: str) -> bool:
        """The user paused after saying ``text``, which is likely the whole turn: send the
        turn's first request now, as :meth:`prepare` would read it, and let the model write
        its reply while the end-of-turn silence runs out (assistant/agent/speculation.py).
        The turn takes the reply over if it sends the same request; any speculation before is
        dropped. False if a turn is under way."""
        arrived = next(self._order)
        with self._lock:
            ahead = self._draft_prompt(text, arrived)
            if ahead is None:
                return False
            form = form_for(text, self.tools)
            request, ask = self.requests.request(ahead, self.requests.native(), form)
            self.drop()
            self._speculation = Speculation(request, ask, self.gate.foreground)
        return True

    def drop(self) -> None:
        """Stop the reply speculated at the last pause, if a turn has not taken it."""
        speculation, self._speculation = self._speculation, None
        if speculation is not None:
            self.speculated.dropped += 1
            speculation.cancel()

    def taken_over(self, request: Request) -> Speculation | None:
        """The reply speculated at the user's pause, if it was this very request (else it is
        dropped, and the turn asks anew)."""
        speculation, self._speculation = self._speculation, None
        if speculation is None:
            return None
        if speculation.request == request:
            log.info("the turn takes over the reply speculated at the pause")
            self.speculated.taken += 1
            return speculation
        log.info("the turn asks anew: its request is not the one speculated at the pause")
        self.speculated.dropped += 1
        speculation.cancel()
        return None

    def _draft_prompt(self, text: str, arrived: int) -> list[Message] | None:
        """The prompt a turn saying ``text`` would send now, with the memories its drafts
        carry; None while a turn holds the window, for nothing, or for a draft that arrived
        before one already made (drafts come from more than one thread: a word's read ahead
        must not drop the speculation on the sentence typed after it). Called holding
        ``_lock``."""
        if not text.strip() or arrived < self._made:
            return None
        self._made = arrived
        if not self.window.lock.acquire(blocking=False):
            return None
        try:
            self.window.drafting = True
            shown = self.memories.for_draft(text)
            ahead = self.context.messages()
            block = memories_block(shown, text, self.memories.stores.stream.now())
            if block:
                ahead.append({"role": "system", "content": block})
            ahead.append({"role": "user", "content": text})
        finally:
            self.window.lock.release()
        log.debug("a draft of %d characters (%d memories)", len(text), len(shown))
        return ahead
