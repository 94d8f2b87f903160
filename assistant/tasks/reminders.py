"""Reminders: a text and a time, kept on disk until they fire, so they survive restarts; one
that came due while the app was closed fires at the next start, with a note that it is late."""

from __future__ import annotations

import logging
import re
import secrets
import threading
from datetime import datetime, timedelta
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from assistant.agent.checks.text import straight
from assistant.json_list import JsonList
from memory.records import utc_now
from memory.timeparse import resolve_event_time

log = logging.getLogger(__name__)

# A reminder that fires later than this after its time says so.
LATE_AFTER = timedelta(minutes=1)
# A day named with no time ("tomorrow") is a reminder for this hour of it.
DEFAULT_HOUR = 9
# Seconds, which memory/timeparse.py does not read: "in 3 seconds", "in a few secs", "in 5 s".
_SECONDS = re.compile(r"\bin\s+(\d+|a|one|a few)\s+(?:seconds?|secs?|s)\b", re.IGNORECASE)
_FEW = {"a": 1, "one": 1, "a few": 5}
_TIMER = re.compile(r"\btimer for (.+?)(?:[.!?]|$)", re.IGNORECASE)


def local_now() -> datetime:
    """Now, in the computer's time zone ("at 9" means the user's 9 o'clock)."""
    return datetime.now().astimezone()


class ReminderError(ValueError):
    """A reminder that cannot be set; the message is for whoever asked."""


class Reminder(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(default_factory=lambda: "r-" + secrets.token_hex(3))
    text: str
    due_at: datetime
    created_at: datetime = Field(default_factory=utc_now)
    # Who set it: "agent", "user", or "subagent:<task id>".
    source: str = "agent"
    fired_at: datetime | None = None

    def late_by(self) -> timedelta | None:
        """How late it fired, when that is worth saying."""
        if self.fired_at is None or self.fired_at - self.due_at < LATE_AFTER:
            return None
        return self.fired_at - self.due_at

    def announcement(self) -> str:
        late = self.late_by()
        if late is None:
            return f"Reminder: {self.text}"
        due = self.due_at.astimezone().strftime("%H:%M on %b %d")
        return f"Reminder (late, it was due at {due} while Brain OS was not running): {self.text}"


# A time said on the twelve-hour clock ("6 pm", "7:30 a.m."): the confirmation says it so too.
_AM_PM = re.compile(r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)(?!\w)", re.IGNORECASE)


def says_am_pm(words: str) -> bool:
    """Whether ``words`` name a time on the twelve-hour clock."""
    return _AM_PM.search(words) is not None


def spoken_time(due: datetime, now: datetime, twelve_hour: bool = False) -> str:
    """When ``due`` is, as said to the user: "in 30 seconds", "in 20 minutes", "today at
    18:00", "tomorrow at 09:00", "on Friday at 17:30", "on 3 December at 10:00" (in ``due``'s
    zone); with ``twelve_hour``, as the user said it: "today at 6 pm", "tomorrow at 9:30 am"."""
    local_now = now.astimezone(due.tzinfo)
    seconds = round((due - local_now).total_seconds())
    if 0 <= seconds < 60:
        return f"in {seconds} second{'' if seconds == 1 else 's'}"
    minutes = round(seconds / 60)
    if 0 < minutes < 60:
        return f"in {minutes} minute{'' if minutes == 1 else 's'}"
    days = (due.date() - local_now.date()).days
    clock = _twelve_hour(due) if twelve_hour else f"{due:%H:%M}"
    if days == 0:
        return f"today at {clock}"
    if days == 1:
        return f"tomorrow at {clock}"
    if 1 < days < 7:
        return f"on {due:%A} at {clock}"
    return f"on {due.day} {due:%B} at {clock}"


def _twelve_hour(due: datetime) -> str:
    hour = due.hour % 12 or 12
    minutes = f":{due.minute:02d}" if due.minute else ""
    return f"{hour}{minutes} {'am' if due.hour < 12 else 'pm'}"


_TO_YOU = {
    "i am": "you are",
    "i'm": "you're",
    "i'll": "you'll",
    "i've": "you've",
    "i'd": "you'd",
    "i": "you",
    "me": "you",
    "my": "your",
    "mine": "yours",
    "myself": "yourself",
}
# Longer forms first ("I'm" before "I"); the apostrophe as typed or as a typographer's.
_FIRST_PERSON = re.compile(
    r"\b(" + "|".join(k.replace("'", "['\u2019]") for k in _TO_YOU) + r")\b", re.IGNORECASE
)


def addressed_to_the_user(text: str) -> str:
    """The user's own words turned to them: "water my seedlings" -> "water your seedlings" (a
    reminder is said back and read when it fires; the model copies the user's "my" into it)."""
    return _FIRST_PERSON.sub(lambda found: _TO_YOU[straight(found.group(1).lower())], text)


# What the user asked to be reminded of, in their own words: "remind me (when) to <what>",
# "don't let me forget to <what>", "set a reminder (when) to <what>".
_ASKED_TO = re.compile(
    r"\b(?:remind me|reminder|let me forget|make sure i (?:remember|don't forget))\b"
    r"(?:(?!\bto\b)[^.!?])*\bto\s+(?P<what>[^.!?]*\w)",
    re.IGNORECASE,
)
# Where a time said after what to be reminded of may start.
_TIME_WORD = re.compile(
    r"\b(?:at|on|in|by|this|tonight|today|tomorrow|next|every|before|after)\b", re.IGNORECASE
)


def asked_for_in(words: str, now: datetime) -> str | None:
    """What ``words`` ask to be reminded of ("ice my knee" in "Remind me tomorrow at 7 pm to
    ice my knee."), without a time said after it ("call the plumber" in "... to call the
    plumber on Friday"); None where they do not say it so. Taken from the user as the time is
    (``time_named_in``): the 0.5B model, asked for the text, wrote its own persona into it."""
    found = _ASKED_TO.search(straight(words))
    if found is None:
        return None
    what = found.group("what").strip()
    for start in _TIME_WORD.finditer(what):
        if start.start() and time_named_in(what[start.start() :], now) is not None:
            return what[: start.start()].rstrip(" ,")
    return what


_BARE_CLOCK = re.compile(r"^\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)?$", re.IGNORECASE)


def reminder_time(when: str, now: datetime) -> datetime:
    """When a reminder said as "in 10 minutes", "tomorrow at 11", "in 3 seconds" or an ISO time
    is due (``now`` is timezone-aware; the result is in its zone)."""
    text = when.strip()
    in_seconds = _seconds_from(text, now)
    if in_seconds is not None:
        return in_seconds
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        pass
    else:
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=now.tzinfo)
    due = _resolved(text, now)
    if due is None and _BARE_CLOCK.match(text):  # "19:00", "7pm": the next such time
        due = _resolved(f"at {text}", now)
    if due is None:
        raise ReminderError(
            f"could not tell when {when!r} is; say e.g. 'in 10 minutes', 'tomorrow at 9' or "
            "an ISO time like 2026-12-24T18:00"
        )
    return due


def time_named_in(words: str, now: datetime) -> datetime | None:
    """The time the user's own request names ("... this evening", "in 20 minutes", "in 30
    seconds"), if it names one. Read by code it is right where the model's ``when`` is not:
    the 0.5B model put an evening in the early afternoon, and an hour said with "tonight" in
    the morning."""
    in_seconds = _seconds_from(words, now)
    if in_seconds is not None:
        return in_seconds
    timer = _TIMER.search(words)
    if timer:  # "a timer for 10 minutes": in 10 minutes
        return time_named_in(f"in {timer.group(1)}", now) or _resolved(words, now)
    return _resolved(words, now)


def _seconds_from(text: str, now: datetime) -> datetime | None:
    seconds = _SECONDS.search(text)
    if seconds is None:
        return None
    count = seconds.group(1).lower()
    return now + timedelta(seconds=_FEW.get(count) or int(count))


def _resolved(text: str, now: datetime) -> datetime | None:
    resolved = resolve_event_time(text, now)
    if resolved is None:
        return None
    return resolved.when if resolved.has_time else resolved.when.replace(hour=DEFAULT_HOUR)


class ReminderStore:
    """The reminders in one JSON file, rewritten whole on each change. Thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._file = JsonList(path, Reminder, "reminders")
        self._reminders = self._file.items
        # What went wrong opening the file, for the user (it was moved aside, not lost).
        self.problem = self._file.problem

    def add(self, text: str, due_at: datetime, source: str = "agent") -> Reminder:
        text = " ".join(text.split())
        if not text:
            raise ReminderError("a reminder needs some text")
        reminder = Reminder(text=text, due_at=due_at, source=source)
        with self._lock:
            self._reminders.append(reminder)
            self._save()
        return reminder

    def pending(self) -> list[Reminder]:
        """Not fired yet, soonest first."""
        with self._lock:
            waiting = [r for r in self._reminders if r.fired_at is None]
        return sorted(waiting, key=lambda r: r.due_at)

    def set_before(self, when: datetime, within: timedelta) -> bool:
        """A reminder, fired or not, is due in the ``within`` before ``when``."""
        with self._lock:
            return any(when - within <= r.due_at <= when for r in self._reminders)

    def next_due(self) -> datetime | None:
        pending = self.pending()
        return pending[0].due_at if pending else None

    def due(self, now: datetime) -> list[Reminder]:
        """The reminders due by ``now``, as they read when fired now (still pending until
        ``mark_fired``: one whose announcement never went out fires again after a restart)."""
        with self._lock:
            due = [r for r in self._reminders if r.fired_at is None and r.due_at <= now]
        return [r.model_copy(update={"fired_at": now}) for r in due]

    def mark_fired(self, fired: list[Reminder]) -> None:
        at = {r.id: r.fired_at for r in fired}
        with self._lock:
            for reminder in self._reminders:
                if reminder.id in at and reminder.fired_at is None:
                    reminder.fired_at = at[reminder.id]
            self._save()

    def _save(self) -> None:
        self._file.save()
