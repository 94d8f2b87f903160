"""Resolve relative time expressions in English text to absolute, timezone-aware datetimes.

`resolve_event_time(text, reference)` finds the first time expression in `text` and
resolves it against `reference`, the record's creation time. Only the standard library
is used. Matching is case-insensitive and works anywhere inside a longer sentence.

Conventions
-----------
* Result: `when` carries the reference's tzinfo. When only a date was said ("tomorrow",
  "on March 5", "in 3 days", "a week ago") `when` is 00:00 local that day and `has_time`
  is False; every other result has `has_time` True.
* A date part and a time part next to each other combine, in either order: "next Wednesday
  at 4pm", "tomorrow morning at 7", "on Friday evening", "at 10am on Friday".
* Days, weeks, months and years are counted on the calendar (wall clock) in the
  reference's zone; month arithmetic clamps to the month's last day (Jan 31 + 1 month =
  Feb 28/29). Minutes and hours are elapsed time: "in 2 hours" is 120 real minutes
  later, even across a DST change. A wall time that does not exist (skipped by DST) is
  moved forward by the gap (02:30 on the spring-forward day becomes 03:30).
* today / yesterday / tomorrow / the day after tomorrow / the day before yesterday are
  dates. "tonight" is today at 20:00 unless a time is given ("tonight at 9" = 21:00).
  "this morning", "last night" and "tomorrow night" work as one would expect.
* "in N <unit>", "N <unit> ago" and "N <unit> from now": units minute(s), min(s),
  hour(s), hr(s), day(s), week(s), month(s), year(s); N is digits, a/an, one..nineteen,
  twenty..sixty (also "twenty-five"), or "half an hour". Seconds are not supported.
* Weekdays: a bare weekday, "on X" or "this X" is the nearest future occurrence; today
  counts only when a time is given that is still ahead of the reference. "next X" is X
  in the following calendar week (weeks run Monday..Sunday), the common American
  reading: on a Saturday, "next Tuesday" is 3 days ahead and "next Saturday" 7 days.
  "last X" is the most recent X strictly before today.
* "next week" is Monday of next week, "next month" the 1st of next month, "next year"
  January 1 ("last week/month/year" likewise backwards). "this weekend" is the
  Saturday of the current week (today on a Saturday or Sunday); "next weekend" is the
  Saturday of next week.
* Times of day: "at 3", "at 3pm", "at 3:30 p.m.", "at 15:30", "3pm", "at noon",
  "at midnight"; "in the morning" = 09:00, "in the afternoon" = 15:00, "in the evening" =
  19:00, "at night" = 21:00 (after a date the bare words work too: "Friday evening").
  An hour 1..12 said without am/pm takes it from the period of the day if one is given
  ("at 7 in the morning" = 07:00), otherwise 1..7 means pm, 8..11 am and 12 noon; an
  hour written with a leading zero ("at 07:30") or above 12 is on the 24-hour clock.
  "midnight" is the end of the day it belongs to: "Friday at midnight" is 00:00 on
  Saturday. A time with no date is today if still ahead of the reference, else tomorrow.
* Dates: "March 5", "March 5th, 2027", "5 March", "the 5th of March", "2026-12-24", and
  "in May" (the 1st of that month; the current month counts). A date without a year is
  its next occurrence on or after the reference date. Month names are only recognised
  next to a day number or after "in", so "I may go" holds no date. Slash dates
  ("12/24") are ambiguous between locales and deliberately not supported.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Literal, TypeAlias, TypeVar


@dataclass(frozen=True)
class ResolvedTime:
    """A time expression found in a text, resolved to an absolute datetime."""

    when: datetime
    expression: str
    has_time: bool


_Meridiem: TypeAlias = Literal["am", "pm"]


@dataclass(frozen=True)
class _Day:
    """A date; `later` replaces `day` unless a time is given that is ahead of the reference.
    `named_by`: a weekday, which a calendar date said right after it replaces ("Saturday
    12 December"), or the calendar date itself."""

    day: date
    later: date | None = None
    named_by: Literal["weekday", "date"] | None = None


@dataclass(frozen=True)
class _Clock:
    """A clock time; `ambiguous` when an hour 1..12 was said without am/pm."""

    at: time
    ambiguous: bool = False
    days_after: int = 0


@dataclass(frozen=True)
class _Period:
    """A period of the day: its default time, and the half of the day it lies in."""

    default: time
    meridiem: _Meridiem


@dataclass(frozen=True)
class _Instant:
    """An exact point in time ("in 2 hours"); it takes no other part."""

    when: datetime


_Part: TypeAlias = _Day | _Clock | _Period | _Instant
_Handler: TypeAlias = Callable[[re.Match[str], datetime], tuple[_Part, ...]]
_P = TypeVar("_P", _Day, _Clock, _Period, _Instant)


@dataclass(frozen=True)
class _Found:
    start: int
    end: int
    parts: tuple[_Part, ...]


_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_ONES = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TEENS = ("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen")
_NUMBER_WORDS: dict[str, int] = {
    "a": 1,
    "an": 1,
    **{word: value for value, word in enumerate(_ONES, start=1)},
    **{word: value for value, word in enumerate(_TEENS, start=10)},
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
}
# Unit, keyed by its first two letters: (what it counts, how many of those).
_UNIT_STEPS: dict[str, tuple[Literal["minute", "day", "month"], int]] = {
    "mi": ("minute", 1),
    "ho": ("minute", 60),
    "hr": ("minute", 60),
    "da": ("day", 1),
    "we": ("day", 7),
    "mo": ("month", 1),
    "ye": ("month", 12),
}
_DAY_OFFSETS = {
    "day before yesterday": -2,
    "yesterday": -1,
    "today": 0,
    "tomorrow": 1,
    "day after tomorrow": 2,
}
_PERIODS = {
    "morning": _Period(time(9), "am"),
    "afternoon": _Period(time(15), "pm"),
    "evening": _Period(time(19), "pm"),
    "night": _Period(time(21), "pm"),
}
_TONIGHT = _Period(time(20), "pm")


def _alternation(words: Iterable[str]) -> str:
    return "|".join(sorted(words, key=len, reverse=True))


_WEEKDAY = _alternation(_WEEKDAYS)
_MONTH = _alternation(_MONTHS)
_NUMBER = (
    rf"\d{{1,4}}|(?:twenty|thirty|forty|fifty)[-\s](?:{_alternation(_ONES)})"
    rf"|{_alternation(_NUMBER_WORDS)}"
)
_UNIT = r"min(?:ute)?s?|h(?:ou)?rs?|days?|weeks?|months?|years?"
_QUANTITY = rf"(?:(?P<half>half\s+an?\s+hour)|(?P<count>{_NUMBER})\s+(?P<unit>{_UNIT}))"
_HOUR_MINUTE = r"(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?"
_MERIDIEM = r"(?P<meridiem>[ap])(?:\.m\.|\.?m\b)"
_CLOCK_END = r"(?![\w:]|[.,]\d)"
_ORDINAL = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(?P<year>\d{4}))?"
_SEPARATORS = " \t\n,"


def resolve_event_time(text: str, reference: datetime) -> ResolvedTime | None:
    """The first time expression in `text`, resolved against `reference` (must be tz-aware;
    raise ValueError if naive). None if the text holds none."""
    if reference.utcoffset() is None:
        raise ValueError("the reference datetime must be timezone-aware")
    first = _earliest(text, reference)
    if first is None:
        return None
    found = _extend(first, text, reference)
    when, has_time = _resolve(found.parts, reference)
    return ResolvedTime(when, text[found.start : found.end], has_time)


# --- finding the expression ---------------------------------------------------------


def _earliest(text: str, reference: datetime) -> _Found | None:
    """The leading part that starts first (the longest one on a tie)."""
    candidates = (_first_valid(regex, handler, text, reference) for regex, handler in _LEADING)
    found = [candidate for candidate in candidates if candidate is not None]
    return min(found, key=lambda item: (item.start, -item.end), default=None)


def _first_valid(
    regex: re.Pattern[str], handler: _Handler, text: str, reference: datetime
) -> _Found | None:
    for match in regex.finditer(text):
        parts = _apply(handler, match, reference)
        if parts:
            return _Found(match.start(), match.end(), parts)
    return None


def _extend(found: _Found, text: str, reference: datetime) -> _Found:
    """Add the parts that directly follow, each kind at most once ("tomorrow" + "at 3")."""
    if _find(found.parts, _Instant) is not None:
        return found
    while (follower := _follower(found, text, reference)) is not None:
        found = _Found(found.start, follower.end, follower.parts)
    return found


def _follower(found: _Found, text: str, reference: datetime) -> _Found | None:
    start = len(text) - len(text[found.end :].lstrip(_SEPARATORS))
    taken = {type(part) for part in found.parts} | {_Instant}
    day = _find(found.parts, _Day)
    followers: list[_Found] = []
    for regex, handler in _FOLLOWING:
        match = regex.match(text, start)
        if match is None:
            continue
        parts = _apply(handler, match, reference)
        dated = _find(parts, _Day)
        if day is not None and day.named_by == "weekday" and dated and dated.named_by == "date":
            # The date says which of the weekdays was meant: it takes the weekday's place.
            kept = tuple(part for part in found.parts if part is not day)
            followers.append(_Found(found.start, match.end(), kept + parts))
        elif parts and taken.isdisjoint(type(part) for part in parts):
            followers.append(_Found(match.start(), match.end(), found.parts + parts))
    return max(followers, key=lambda item: item.end, default=None)


def _apply(handler: _Handler, match: re.Match[str], reference: datetime) -> tuple[_Part, ...]:
    try:
        return handler(match, reference)
    except (ValueError, OverflowError):  # February 30, 25:00, a year past 9999
        return ()


# --- resolving the parts ------------------------------------------------------------


def _resolve(parts: Sequence[_Part], reference: datetime) -> tuple[datetime, bool]:
    instant = _find(parts, _Instant)
    if instant is not None:
        return instant.when, True
    zone = reference.tzinfo
    today = reference.date()
    day = _find(parts, _Day) or _Day(today, later=today + timedelta(days=1))
    moment = _time_of_day(_find(parts, _Clock), _find(parts, _Period))
    if moment is None:
        return _wall_clock(day.later or day.day, time(0), zone), False
    at, days_after = moment
    when = _wall_clock(day.day + timedelta(days=days_after), at, zone)
    if day.later is not None and when <= reference:
        when = _wall_clock(day.later + timedelta(days=days_after), at, zone)
    return when, True


def _find(parts: Sequence[_Part], kind: type[_P]) -> _P | None:
    return next((part for part in parts if isinstance(part, kind)), None)


def _time_of_day(clock: _Clock | None, period: _Period | None) -> tuple[time, int] | None:
    """The time said, and how many days after the date it falls (1 for midnight)."""
    if clock is None:
        return None if period is None else (period.default, 0)
    if not clock.ambiguous:
        return clock.at, clock.days_after
    hour = clock.at.hour
    meridiem = period.meridiem if period is not None else _default_meridiem(hour)
    return clock.at.replace(hour=_with_meridiem(hour, meridiem)), clock.days_after


def _default_meridiem(hour: int) -> _Meridiem:
    return "am" if 8 <= hour <= 11 else "pm"


def _with_meridiem(hour: int, meridiem: _Meridiem) -> int:
    return hour % 12 + (12 if meridiem == "pm" else 0)


def _wall_clock(day: date, at: time, zone: tzinfo | None) -> datetime:
    """`at` on `day` in `zone`; a time skipped by DST moves forward by the gap."""
    return datetime.combine(day, at, tzinfo=zone).astimezone(UTC).astimezone(zone)


def _elapsed(reference: datetime, delta: timedelta) -> datetime:
    return (reference.astimezone(UTC) + delta).astimezone(reference.tzinfo)


def _add_months(day: date, months: int) -> date:
    year, month_index = divmod(day.year * 12 + day.month - 1 + months, 12)
    last_day = calendar.monthrange(year, month_index + 1)[1]
    return date(year, month_index + 1, min(day.day, last_day))


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _upcoming(month: int, day: int, since: date) -> date:
    """The first `month`/`day` on or after `since` (February 29 may be years away)."""
    for year in range(since.year, since.year + 9):
        if day <= calendar.monthrange(year, month)[1] and date(year, month, day) >= since:
            return date(year, month, day)
    raise ValueError(f"no day {day} in month {month}")


def _number(words: str) -> int:
    if words.isdigit():
        return int(words)
    return sum(_NUMBER_WORDS[word] for word in re.split(r"[-\s]+", words.lower()))


# --- handlers: one regex match to the parts it says ---------------------------------


def _offset(match: re.Match[str], reference: datetime) -> tuple[_Part, ...]:
    sign = -1 if match.groupdict().get("ago") else 1
    if match["half"]:
        step, amount = "minute", 30
    else:
        step, factor = _UNIT_STEPS[match["unit"][:2].lower()]
        amount = factor * _number(match["count"])
    if step == "minute":
        return (_Instant(_elapsed(reference, timedelta(minutes=sign * amount))),)
    if step == "day":
        return (_Day(reference.date() + timedelta(days=sign * amount)),)
    return (_Day(_add_months(reference.date(), sign * amount)),)


def _day_word(match: re.Match[str], reference: datetime) -> tuple[_Part, ...]:
    words = " ".join(match["word"].lower().split()).removeprefix("the ")
    return (_Day(reference.date() + timedelta(days=_DAY_OFFSETS[words])),)


def _tonight(match: re.Match[str], reference: datetime) -> tuple[_Part, ...]:
    return _Day(reference.date()), _TONIGHT


def _this_period(match: re.Match[str], reference: datetime) -> tuple[_Part, ...]:
    return _Day(reference.date()), _PERIODS[match["period"].lower()]


def _last_night(match: re.Match[str], reference: datetime) -> tuple[_Part, ...]:
    return _Day(reference.date() - timedelta(days=1)), _PERIODS["night"]


def _weekday(match: re.Match[str], reference: datetime) -> tuple[_Part, ...]:
    today = reference.date()
    target = _WEEKDAYS.index(match["weekday"].lower())
    modifier = (match["modifier"] or "").lower()
    if modifier == "next":
        return (_Day(_monday(today) + timedelta(days=7 + target), named_by="weekday"),)
    if modifier == "last":
        last = today - timedelta(days=(today.weekday() - target) % 7 or 7)
        return (_Day(last, named_by="weekday"),)
    ahead = (target - today.weekday()) % 7
    if ahead == 0:
        return (_Day(today, later=today + timedelta(days=7), named_by="weekday"),)
    return (_Day(today + timedelta(days=ahead), named_by="weekday"),)


def _span(match: re.Match[str], reference: datetime) -> tuple[_Part, ...]:
    today = reference.date()
    step = -1 if match["modifier"].lower() == "last" else 1
    span = match["span"].lower()
    if span == "week":
        return (_Day(_monday(today) + timedelta(weeks=step)),)
    if span == "month":
        return (_Day(_add_months(today.replace(day=1), step)),)
    return (_Day(date(today.year + step, 1, 1)),)


def _weekend(match: re.Match[str], reference: datetime) -> tuple[_Part, ...]:
    today = reference.date()
    saturday = _monday(today) + timedelta(days=5)
    if match["modifier"].lower() == "next":
        return (_Day(saturday + timedelta(weeks=1)),)
    return (_Day(max(today, saturday)),)


def _iso_date(match: re.Match[str], reference: datetime) -> tuple[_Part, ...]:
    day = date(int(match["year"]), int(match["month"]), int(match["day"]))
    return (_Day(day, named_by="date"),)


def _named_date(match: re.Match[str], reference: datetime) -> tuple[_Part, ...]:
    month = _MONTHS.index(match["month"].lower()) + 1
    day = int(match["day"])
    if match["year"]:
        return (_Day(date(int(match["year"]), month, day), named_by="date"),)
    return (_Day(_upcoming(month, day, reference.date()), named_by="date"),)


def _month_only(match: re.Match[str], reference: datetime) -> tuple[_Part, ...]:
    month = _MONTHS.index(match["month"].lower()) + 1
    if match["year"]:
        return (_Day(date(int(match["year"]), month, 1)),)
    return (_Day(_upcoming(month, 1, reference.date().replace(day=1))),)


def _clock(match: re.Match[str], reference: datetime) -> tuple[_Part, ...]:
    hour_text = match["hour"]
    hour = int(hour_text)
    at = time(hour, int(match["minute"] or 0))
    meridiem = match.groupdict().get("meridiem")
    if meridiem is None:
        ambiguous = 1 <= hour <= 12 and not hour_text.startswith("0")
        return (_Clock(at, ambiguous=ambiguous),)
    if not 1 <= hour <= 12:
        return ()
    half: _Meridiem = "pm" if meridiem.lower() == "p" else "am"
    return (_Clock(at.replace(hour=_with_meridiem(hour, half))),)


def _noon_or_midnight(match: re.Match[str], reference: datetime) -> tuple[_Part, ...]:
    if match["word"].lower() == "noon":
        return (_Clock(time(12)),)
    return (_Clock(time(0), days_after=1),)


def _period(match: re.Match[str], reference: datetime) -> tuple[_Part, ...]:
    return (_PERIODS[(match["period"] or match["night"]).lower()],)


def _compile(pattern: str, handler: _Handler) -> tuple[re.Pattern[str], _Handler]:
    return re.compile(pattern, re.IGNORECASE), handler


# Parts that may start an expression.
_LEADING = (
    _compile(rf"\bin\s+{_QUANTITY}\b", _offset),
    _compile(rf"\b{_QUANTITY}\s+(?:(?P<ago>ago)|from\s+(?:now|today))\b", _offset),
    _compile(
        r"\b(?P<word>(?:the\s+)?day\s+(?:after\s+tomorrow|before\s+yesterday)"
        r"|today|tomorrow|yesterday)\b",
        _day_word,
    ),
    _compile(r"\btonight\b", _tonight),
    _compile(r"\bthis\s+(?P<period>morning|afternoon|evening)\b", _this_period),
    _compile(r"\blast\s+night\b", _last_night),
    _compile(
        rf"\b(?:on\s+)?(?:(?P<modifier>this|next|last)\s+)?(?P<weekday>{_WEEKDAY})\b", _weekday
    ),
    _compile(r"\b(?P<modifier>next|last)\s+(?P<span>week|month|year)\b", _span),
    _compile(r"\b(?P<modifier>this|next)\s+weekend\b", _weekend),
    _compile(r"\b(?:on\s+)?(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})\b", _iso_date),
    _compile(rf"\b(?:on\s+)?(?P<month>{_MONTH})\s+(?:the\s+)?{_ORDINAL}{_YEAR}(?!\w)", _named_date),
    _compile(
        rf"\b(?:on\s+)?(?:the\s+)?{_ORDINAL}\s+(?:of\s+)?(?P<month>{_MONTH})\b{_YEAR}(?!\w)",
        _named_date,
    ),
    _compile(rf"\bin\s+(?P<month>{_MONTH})\b(?:\s+(?P<year>\d{{4}})\b)?(?!\s*\d)", _month_only),
    _compile(
        rf"\bat\s+(?:around\s+|about\s+)?{_HOUR_MINUTE}(?:\s*{_MERIDIEM})?"
        rf"(?:\s+o['\u2019]?clock)?{_CLOCK_END}",
        _clock,
    ),
    _compile(rf"(?<![\w.:]){_HOUR_MINUTE}\s*{_MERIDIEM}", _clock),
    _compile(r"\b(?:at\s+)?(?P<word>noon|midnight)\b", _noon_or_midnight),
    _compile(
        r"\b(?:in\s+the\s+(?P<period>morning|afternoon|evening)|at\s+(?P<night>night))\b",
        _period,
    ),
)
# Parts that may only follow another part: "tomorrow morning", "Friday 15:30".
_FOLLOWING = (
    *_LEADING,
    _compile(
        r"\b(?:(?:in\s+the\s+)?(?P<period>morning|afternoon|evening)|(?:at\s+)?(?P<night>night))\b",
        _period,
    ),
    _compile(rf"\b(?P<hour>\d{{1,2}}):(?P<minute>\d{{2}}){_CLOCK_END}", _clock),
)
