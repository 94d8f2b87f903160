"""Replies first: background LLM work (importance ratings, reflection, summaries of idle
time) waits while a reply is being generated, and a background request still running when a
reply starts is abandoned and asked again afterwards. The local server answers one request at
a time; a rating batch sent during a reply would hold the reply up for its whole length."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from assistant.llm.client import LLMCancelled
from assistant.llm.messages import JsonSchema, TextMessage
from assistant.llm.protocols import CancellableJsonLLM
from assistant.llm.tokens import counter_of

log = logging.getLogger(__name__)

# The longest background work waits for the foreground before going ahead anyway (a reply
# stuck for minutes must not starve the ratings for ever).
MAX_WAIT_S = 120.0
# How often a cancellable wait for the gate looks at its cancel.
CANCEL_POLL_S = 0.1


class BackgroundTurns:
    """Whose turn it is at the background server: one request at a time, and an urgent one
    (the window's summary) before the others waiting. With a plain lock the summary waited
    behind whichever ratings and graph extractions polled for it first."""

    def __init__(self) -> None:
        self._turns = threading.Condition()
        self._held = False
        self._urgent_waiting = 0

    def acquire(self, timeout: float = -1, urgent: bool = False) -> bool:
        """Take the turn (within ``timeout`` seconds; -1: however long it takes)."""
        with self._turns:
            self._urgent_waiting += urgent
            try:
                ready = self._turns.wait_for(
                    lambda: not self._held and (urgent or self._urgent_waiting == 0),
                    None if timeout < 0 else timeout,
                )
                self._held = self._held or ready
                return ready
            finally:
                self._urgent_waiting -= urgent

    def release(self) -> None:
        with self._turns:
            self._held = False
            self._turns.notify_all()

    def __enter__(self) -> None:
        self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


class Hold:
    """One reply's hold on the cores (``ForegroundGate.foreground``)."""

    def __init__(self, gate: ForegroundGate) -> None:
        self._gate = gate
        self.lifted = False

    def lift(self) -> None:
        """The reply's first sentence is out: the user has something to read or hear, and
        the rest may share the cores (the background server goes on meanwhile)."""
        self._gate._lift(self)


class ForegroundGate:
    """Counts replies in progress; background callers wait until there are none."""

    def __init__(self) -> None:
        self._active = 0
        self._idle = threading.Condition()
        # Set while a reply is in progress: background requests in flight give way.
        self.preempt = threading.Event()
        # Held by the one background request in flight: the llama.cpp server abandons the
        # request it is streaming when another arrives (both came back empty when a rating
        # and a sub-agent's step were sent at once), so background work takes turns.
        self.background = BackgroundTurns()
        # Set when the service closes: background work in flight (a graph extraction can
        # take half a minute on a small machine) is abandoned rather than waited for.
        self.closing = threading.Event()
        # Told whether a reply now holds the cores (one is under way, its first sentence not
        # out yet, and not itself waiting on background work), and told again when urgent
        # background work starts or ends (``urgent``).
        self._listeners: list[Callable[[bool], None]] = []
        self._needed = 0
        self._urgent = 0
        # Replies under way whose first sentence is out (``Hold.lift``).
        self._lifted = 0
        self._told = (False, False)

    def listen(self, listener: Callable[[bool], None]) -> None:
        self._listeners.append(listener)

    @contextmanager
    def foreground(self) -> Iterator[Hold]:
        """A reply under way; ``Hold.lift`` once its first sentence is out lets the listeners
        (the background server's pause) go on while the rest streams."""
        hold = Hold(self)
        with self._idle:
            self._active += 1
            self.preempt.set()
            self._tell()
        try:
            yield hold
        finally:
            with self._idle:
                self._active -= 1
                self._lifted -= hold.lifted
                if self._active == 0:
                    self.preempt.clear()
                    self._idle.notify_all()
                self._tell()

    def _lift(self, hold: Hold) -> None:
        with self._idle:
            if hold.lifted:
                return
            hold.lifted = True
            self._lifted += 1
            self._tell()

    @contextmanager
    def background_needed(self) -> Iterator[None]:
        """A reply waits on background work (a summary the window needs): the cores are the
        background's meanwhile."""
        with self._idle:
            self._needed += 1
            self._tell()
        try:
            yield
        finally:
            with self._idle:
                self._needed -= 1
                self._tell()

    @contextmanager
    def urgent(self) -> Iterator[None]:
        """Background work the next turns need is under way (the window's summary: until it
        is in, every turn reads a longer prompt): the user typing or speaking does not hold
        it back, only a reply does (``BackgroundPause``)."""
        with self._idle:
            self._urgent += 1
            self._tell()
        try:
            yield
        finally:
            with self._idle:
                self._urgent -= 1
                self._tell()

    @property
    def urgent_work(self) -> bool:
        return self._urgent > 0

    def _tell(self) -> None:
        holds = self._active > self._lifted and self._needed == 0
        state = (holds, self._urgent > 0)
        if state == self._told:
            return
        self._told = state
        for listener in self._listeners:
            listener(holds)

    @property
    def busy(self) -> bool:
        return self._active > 0

    def close(self) -> None:
        """Abandon every background request now and from now on (with :class:`LLMCancelled`)."""
        self.closing.set()

    def wait_idle(self, timeout: float | None = MAX_WAIT_S) -> bool:
        """Block until no reply is in progress; False if ``timeout`` ran out first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._active == 0, timeout=timeout)


class BackgroundLLM:
    """The client as background work sees it: each request waits for the gate first, and
    gives way (abandoned, then asked again once the reply is done) if a reply starts while
    it runs."""

    def __init__(
        self,
        client: CancellableJsonLLM,
        gate: ForegroundGate,
        on_idle_cores: Callable[[], bool] = lambda: False,
        urgent: bool = False,
    ) -> None:
        """``urgent``: its requests take their turn at the background server before the
        others waiting (``BackgroundTurns``)."""
        self.client = client
        self.gate = gate
        self.urgent = urgent
        # True while the client is a server that computes only on idle cores (the runtime's
        # background llama-server): a request then neither waits for replies nor gives way
        # to one, since it cannot slow them, and long work (a summary of the window) finishes
        # in the pauses between turns instead of starting over at every turn.
        self.on_idle_cores = on_idle_cores

    def count_tokens(self, text: str) -> int:
        return counter_of(self.client)(text)

    def complete_json(
        self,
        messages: Sequence[TextMessage],
        schema: JsonSchema,
        *,
        max_tokens: int | None = None,
        temperature: float | None = 0.0,
        cancel: threading.Event | None = None,
    ) -> dict[str, Any]:
        """As the client's; ``cancel`` (a task's) or the gate's closing abandons the request,
        or the wait for the gate, at once with :class:`LLMCancelled`."""
        abandon = _Either(cancel, self.gate.closing)
        while True:
            if abandon.is_set():
                raise LLMCancelled("background work was cancelled or is closing")
            # After MAX_WAIT_S of replies it goes ahead anyway, and is not abandoned for one.
            waited = not self.on_idle_cores() and self._wait_idle(abandon)
            stop = _Either(self.gate.preempt if waited else None, abandon)
            try:
                with self._turn(abandon):
                    return self.client.complete_json(
                        messages,
                        schema,
                        max_tokens=max_tokens,
                        temperature=temperature,
                        cancel=stop,
                    )
            except LLMCancelled:
                if abandon.is_set():
                    raise
                log.info("a reply started: the background request waits and is asked again")

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """The background server to oneself: no other background request runs meanwhile
        (raises :class:`LLMCancelled` if the service closes while waiting)."""
        with self._turn(self.gate.closing):
            yield

    @contextmanager
    def _turn(self, abandon: threading.Event) -> Iterator[None]:
        """This request's turn at the background server (waiting for it can be abandoned)."""
        while not self.gate.background.acquire(timeout=CANCEL_POLL_S, urgent=self.urgent):
            if abandon.is_set():
                raise LLMCancelled("cancelled while waiting for other background work")
        try:
            yield
        finally:
            self.gate.background.release()

    def _wait_idle(self, abandon: threading.Event) -> bool:
        deadline = time.monotonic() + MAX_WAIT_S
        while not self.gate.wait_idle(timeout=CANCEL_POLL_S):
            if abandon.is_set():
                raise LLMCancelled("cancelled while waiting for a reply to finish")
            if time.monotonic() >= deadline:
                return False
        return True


class _Either(threading.Event):
    """Set when any of ``events`` is (what a cancellable request polls)."""

    def __init__(self, *events: threading.Event | None) -> None:
        super().__init__()
        self.events = [event for event in events if event is not None]

    def is_set(self) -> bool:
        return any(event.is_set() for event in self.events)
