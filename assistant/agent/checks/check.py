"""The one interface of a reply check.

A check reads one step's reply as it streams, piece by piece, and returns what may be shown
now (it may hold a few words while it cannot yet tell). Each has one verdict at any time:

- ``PASS``: nothing to do;
- ``TRIM``: it left something out or changed a word; the reply goes on, and the window keeps
  what the user was shown rather than what the model wrote;
- ``STOP``: the reply ends here (the server stops writing it); what was shown stands;
- ``REASK``: the reply is not shown from here and is asked for once more, in the form the
  check's ``reasked`` gives.

A check is built for one try of a step (``for_step``) from the step's form and what it is
compared with (``Seen``); a re-ask's form disarms the check that asked for it, so no check asks
twice.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar, Self

from assistant.agent.checks.recent import RecentReplies
from assistant.agent.reply_form import ReplyForm


class Verdict(Enum):
    PASS = "pass"
    TRIM = "trim"
    STOP = "stop"
    REASK = "reask"


@dataclass(frozen=True)
class Seen:
    """What the checks of one step compare its reply with."""

    # The user's words the step answers ("" for a heartbeat's).
    heard: str
    # All the prompt says: what an answer may take its facts from.
    prompt: str
    # The assistant's recent replies, which this one may not copy.
    recent: RecentReplies
    # The core memory's human block: what the user told of themselves.
    human: str
    # What the user said in the memories shown and in the messages the window holds, oldest
    # message last (``heard`` last of all).
    said: tuple[str, ...] = ()
    # What the prompt tells the model (instructions, persona, the framing of events), which
    # a reply never says back, and what it was told of the user's world, which it may.
    notes: str = ""
    facts: str = ""


class Check(ABC):
    # How the check is named in the settings and the log.
    name: ClassVar[str]

    @classmethod
    @abstractmethod
    def for_step(cls, form: ReplyForm, seen: Seen) -> Self:
        """The check for one try of a step held to ``form`` (disarmed where it has nothing
        to check)."""

    @abstractmethod
    def feed(self, piece: str) -> str:
        """Take the next piece of the reply; returns what may be shown now."""

    @abstractmethod
    def flush(self) -> str:
        """What is still held, at the end of the reply (as far as the verdict allows)."""

    @property
    @abstractmethod
    def verdict(self) -> Verdict: ...

    def reasked(self, form: ReplyForm) -> ReplyForm:
        """The form of the re-ask a ``REASK`` verdict asks for."""
        return form

    def reason(self) -> str:
        """What the check found, for the log ("" when it passed)."""
        return ""


class HoldingCheck(Check):
    """A check that holds the reply's start until it can tell, then lets everything through."""

    # Whether it lets everything through now, and what it holds meanwhile.
    _open: bool
    _held: str

    def _release(self) -> str:
        """What is held, given up; from now on the check is open."""
        self._open = True
        held, self._held = self._held, ""
        return held
