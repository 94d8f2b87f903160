"""When the agent may speak first: only while the user is there (a client attached, or the
microphone heard them lately), never while they speak or a reply runs, not in quiet hours, at
most a few times an hour, never twice about the same thing, and not for a while after the
user said "not now". What was said is kept on disk so a restart forgets none of it."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from pathlib import Path

from pydantic import BaseModel

from assistant.json_list import load_state, save_state
from assistant.settings import HeartbeatSettings, quiet_hours

log = logging.getLogger(__name__)

# Proactive messages remembered (for the hourly limit and "said once").
SAID_KEPT = 500
# The user's answer to a proactive message that asks for quiet.
_NOT_NOW = re.compile(
    r"\b(?:not now|not right now|later|maybe later|stop (?:it|that|interrupting|talking)|"
    r"leave me alone|be quiet|quiet please|shh+|don'?t (?:bother|interrupt) me|"
    r"i'?m busy|go away)\b",
    re.IGNORECASE,
)


def asks_for_quiet(text: str) -> bool:
    """The user's words ask the assistant to stop speaking first for now."""
    return _NOT_NOW.search(text) is not None


@dataclass(frozen=True)
class GateRules:
    # (start, end) local times; may wrap midnight ("22:00-08:00").
    quiet_hours: tuple[time, time] | None = None
    per_hour: int = 2
    back_off: timedelta = timedelta(hours=2)

    @classmethod
    def of(cls, settings: HeartbeatSettings) -> GateRules:
        return cls(
            quiet_hours=quiet_hours(settings.quiet_hours),
            per_hour=settings.per_hour,
            back_off=timedelta(minutes=settings.back_off_minutes),
        )


class Said(BaseModel):
    at: datetime
    keys: list[str]
    text: str


class Ledger(BaseModel):
    said: list[Said] = []
    quiet_until: datetime | None = None


class ProactiveGate:
    def __init__(
        self,
        rules: GateRules,
        present: Callable[[], bool],
        busy: Callable[[], bool],
        path: Path,
        clock: Callable[[], datetime],
    ) -> None:
        """``present``: the user is there; ``busy``: they speak, or a turn runs or waits."""
        self.rules = rules
        self.present = present
        self.busy = busy
        self.path = path
        self.clock = clock
        self._lock = threading.Lock()
        self.ledger = self._load()

    def blocked(self) -> str | None:
        """Why the agent may not speak first now, or None when it may."""
        now = self.clock()
        if self._in_quiet_hours(now):
            return "quiet hours"
        with self._lock:
            quiet_until = self.ledger.quiet_until
            recent = [s for s in self.ledger.said if s.at > now - timedelta(hours=1)]
        if quiet_until is not None and now < quiet_until:
            return f'the user said "not now" (quiet until {quiet_until:%H:%M})'
        if len(recent) >= self.rules.per_hour:
            return f"{self.rules.per_hour} proactive messages in the last hour"
        if not self.present():
            return "the user is not there"
        if self.busy():
            return "the user is speaking or a reply is under way"
        return None

    def said_before(self, key: str) -> bool:
        with self._lock:
            return any(key in s.keys for s in self.ledger.said)

    def said(self, keys: list[str], text: str) -> None:
        with self._lock:
            said = [*self.ledger.said, Said(at=self.clock(), keys=keys, text=text)]
            self.ledger = self.ledger.model_copy(update={"said": said[-SAID_KEPT:]})
            self._save()

    def not_now(self) -> datetime:
        """The user asked for quiet: no proactive message until the returned time."""
        until = self.clock() + self.rules.back_off
        with self._lock:
            self.ledger = self.ledger.model_copy(update={"quiet_until": until})
            self._save()
        log.info("proactive messages paused until %s", until.isoformat(timespec="minutes"))
        return until

    def quiet_now(self) -> bool:
        """The user's "not now" holds now."""
        with self._lock:
            until = self.ledger.quiet_until
        return until is not None and self.clock() < until

    def last_said(self) -> Said | None:
        with self._lock:
            return self.ledger.said[-1] if self.ledger.said else None

    def _in_quiet_hours(self, now: datetime) -> bool:
        hours = self.rules.quiet_hours
        if hours is None:
            return False
        start, end = hours
        moment = now.time()
        if start <= end:
            return start <= moment < end
        return moment >= start or moment < end

    def _load(self) -> Ledger:
        return load_state(self.path, Ledger, "the proactive ledger")

    def _save(self) -> None:
        save_state(self.path, self.ledger)
