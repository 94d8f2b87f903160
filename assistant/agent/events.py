"""What wakes the agent: one event per thing that happened, rendered as the prompt text the
model reads (MemGPT's event messages)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from memory.records import utc_now


@dataclass(frozen=True)
class UserText:
    text: str
    at: datetime = field(default_factory=utc_now)

    def prompt(self) -> str:
        return self.text


@dataclass(frozen=True)
class UserUtterance:
    """Speech heard and transcribed; ``confidence`` is the recogniser's, 0-1."""

    text: str
    confidence: float
    at: datetime = field(default_factory=utc_now)

    def prompt(self) -> str:
        if self.confidence < 0.6:
            return f"{self.text}\n[spoken; the transcription may be wrong: {self.confidence:.0%}]"
        return self.text


@dataclass(frozen=True)
class HeartbeatTick:
    """A heartbeat found something new (``digest``: one numbered line per thing); the agent
    chooses to do nothing, keep an intention, start a task, or (``may_speak``: the user is
    there and may be spoken to) tell the user."""

    digest: tuple[str, ...] = ()
    may_speak: bool = True
    at: datetime = field(default_factory=utc_now)
    # What to tell the user, when they may be spoken to (Digest.tell), and the pattern the
    # message is held to (Digest.opening).
    tell: str = ""
    opening: str | None = None

    def prompt(self) -> str:
        changed = "\n".join(self.digest) or "(nothing listed)"
        if self.may_speak:
            what = (
                "Tell the user now, in one or two short sentences of your own spoken to them "
                f"(no greeting): {self.tell or 'what item 1 calls for'}"
            )
        else:
            what = (
                "Nothing here needs the user now. Choose one: stay_quiet (most heartbeats), "
                "or set_intention to come back to something at a time (to ask how an event "
                "went, after it)."
            )
        return (
            f"[heartbeat {self.at.isoformat(timespec='minutes')}] No one spoke. What changed "
            f"since you last looked:\n{changed}\n{what}"
        )


@dataclass(frozen=True)
class TaskFinished:
    task_id: str
    summary: str
    at: datetime = field(default_factory=utc_now)

    def prompt(self) -> str:
        return (
            f"[task {self.task_id} finished] {self.summary}\nIf the user would want to know, "
            "tell them the outcome briefly with send_message."
        )


@dataclass(frozen=True)
class ReminderDue:
    """A reminder fired: the user was shown (and, with voice on, told) its text."""

    announcement: str
    at: datetime = field(default_factory=utc_now)

    def prompt(self) -> str:
        return f"[reminder fired; the user was told] {self.announcement}"


@dataclass(frozen=True)
class MemoryChanged:
    """The user edited, deleted or restored a memory on screen."""

    description: str
    at: datetime = field(default_factory=utc_now)

    def prompt(self) -> str:
        return f"[the user changed a memory] {self.description}"


@dataclass(frozen=True)
class NotSaid:
    """A message written at a heartbeat was not said to the user."""

    reason: str
    at: datetime = field(default_factory=utc_now)

    def prompt(self) -> str:
        return f"[your heartbeat message was not said: {self.reason}]"


Event = (
    UserText | UserUtterance | HeartbeatTick | TaskFinished | MemoryChanged | ReminderDue | NotSaid
)


def from_user(event: Event) -> bool:
    return isinstance(event, UserText | UserUtterance)
