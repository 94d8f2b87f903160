"""A reply asked for before its turn, on the words heard at a pause.

A spoken turn ends after 600 ms of silence, but at the 200 ms pause before it the transcript is
usually made already (voice/loop.py), and it is the turn's. So the agent can send the turn's
first request then and let the model write while the silence runs out: the stream is read
into a buffer on its own thread. When the turn starts, its first request is compared with the
one speculated, byte for byte (messages and options): the same, and the turn takes the stream
over, with what was written so far at once; anything else (the user went on speaking, the
memories or the window moved), and the speculation is cancelled and the turn asks as usual.
Nothing is recorded while speculating, so a speculation that was wrong costs server time,
never a wrong answer. GLaDOS and LiveKit's preemptive generation start replies early the same
way.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from assistant.llm.cancellable import cancellable
from assistant.llm.messages import Message, StreamDelta

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Request:
    """What a step sends, in a form two requests can be compared by."""

    messages: str
    options: str

    @classmethod
    def of(cls, messages: Sequence[Message], **options: Any) -> Request:
        return cls(
            json.dumps(list(messages), sort_keys=True, ensure_ascii=False),
            json.dumps(options, sort_keys=True, default=repr),
        )


@dataclass
class Tally:
    """How the speculated replies ended: taken over by their turn, or dropped."""

    taken: int = 0
    dropped: int = 0


class Speculation:
    """One request's stream, read ahead on a thread; taken over by the turn that sends the
    same request, or cancelled."""

    def __init__(
        self,
        request: Request,
        ask: Callable[[], Iterator[StreamDelta]],
        hold: Callable[[], AbstractContextManager[object]] = nullcontext,
    ) -> None:
        """``hold`` is entered on the stream's thread for as long as it runs (the foreground
        gate: it is a reply, and background work waits for it)."""
        self.request = request
        self._ask = ask
        self._hold = hold
        self._deltas: list[StreamDelta] = []
        self._error: BaseException | None = None
        self._done = False
        self._cancel = threading.Event()
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, name="speculation", daemon=True)
        self._thread.start()

    def cancel(self) -> None:
        """Abandon the stream (its HTTP request is closed, so the server stops writing)."""
        self._cancel.set()
        with self._changed:
            self._changed.notify_all()

    def take(self) -> Iterator[StreamDelta]:
        """The reply from its first piece: those written already at once, then the rest as
        they come; the stream's failure is raised here. Left unfinished, the stream stops."""
        sent = 0
        try:
            while True:
                with self._changed:
                    while sent == len(self._deltas) and not self._done:
                        self._changed.wait()
                    pending = self._deltas[sent:]
                    done, error = self._done, self._error
                yield from pending
                sent += len(pending)
                if done and sent == len(self._deltas):
                    if error is not None:
                        raise error
                    return
        finally:
            self.cancel()

    def _read(self) -> None:
        try:
            with self._hold():
                for delta in cancellable(self._ask(), self._cancel):
                    with self._changed:
                        self._deltas.append(delta)
                        self._changed.notify_all()
        except Exception as error:  # handed to the turn that takes it over
            self._error = error
        finally:
            with self._changed:
                self._done = True
                self._changed.notify_all()
