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
    at: datetime = field(default_factory=utc_now)

    def prompt(self) -> str:
        return (
            f"[heartbeat {self.at.isoformat(timespec='minutes')}] No one spoke. Check whether "
            "anything is due; reply with send_message only if the user should hear something."
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


Event = UserText | UserUtterance | HeartbeatTick | TaskFinished | MemoryChanged | ReminderDue


def from_user(event: Event) -> bool:
    return isinstance(event, UserText | UserUtterance)
