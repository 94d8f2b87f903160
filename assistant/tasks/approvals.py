"""Asking the user before a sub-agent's tool acts outside the memory store.

The sub-agent's worker thread blocks in :meth:`Approvals.ask` until a client answers (the TUI's
dialog, ``brain tasks --allow``) or the task is cancelled. Only a user's answer through the
service lets a call run: what a model read in a memory or a document has no way in here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from assistant.tasks.records import ApprovalRequest

# How often a waiting sub-agent checks whether its task was cancelled.
CANCEL_POLL_S = 0.1


class ApprovalError(LookupError):
    """An answer to a question nobody is waiting on (answered already, or the task ended)."""


@dataclass
class _Waiting:
    task_id: str
    request: ApprovalRequest
    answered: threading.Event = field(default_factory=threading.Event)
    allowed: bool = False


Settled = Callable[[str, ApprovalRequest, bool | None], None]


class Approvals:
    def __init__(
        self,
        on_asked: Callable[[str, ApprovalRequest], None] = lambda task_id, request: None,
        on_settled: Settled = lambda task_id, request, allowed: None,
    ) -> None:
        # Told of every new question (the service shows it to every client), and of its end:
        # allowed, refused, or None when the task stopped waiting (cancelled).
        self.on_asked = on_asked
        self.on_settled = on_settled
        self._waiting: dict[str, _Waiting] = {}
        self._lock = threading.Lock()

    def ask(self, task_id: str, request: ApprovalRequest, cancel: threading.Event) -> bool | None:
        """Block until the user answers (True: allowed) or ``cancel`` is set (None)."""
        waiting = _Waiting(task_id, request)
        with self._lock:
            self._waiting[request.id] = waiting
        outcome: bool | None = None
        try:
            self.on_asked(task_id, request)
            while not waiting.answered.wait(CANCEL_POLL_S):
                if cancel.is_set():
                    return None
            outcome = waiting.allowed
            return outcome
        finally:
            with self._lock:
                self._waiting.pop(request.id, None)
            self.on_settled(task_id, request, outcome)

    def answer(self, request_id: str, allow: bool) -> str:
        """Answer a question; returns the id of the task that asked it."""
        with self._lock:
            waiting = self._waiting.pop(request_id, None)
        if waiting is None:
            raise ApprovalError(f"no task is waiting for an answer to {request_id}")
        waiting.allowed = allow
        waiting.answered.set()
        return waiting.task_id

    def pending(self) -> list[tuple[str, ApprovalRequest]]:
        """The questions not yet answered, oldest first, with the tasks that asked them."""
        with self._lock:
            waiting = sorted(self._waiting.values(), key=lambda w: w.request.asked_at)
        return [(w.task_id, w.request) for w in waiting]
