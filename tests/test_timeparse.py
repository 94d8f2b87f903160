"""resolve_event_time: relative time expressions resolved against a fixed reference.

Every expected value is written out by hand. The main reference is Saturday 2026-11-21
14:30 in Europe/Berlin (UTC+01:00 in winter, +02:00 in summer).
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from memory.timeparse import ResolvedTime, resolve_event_time

BERLIN = ZoneInfo("Europe/Berlin")
SATURDAY = datetime(2026, 11, 21, 14, 30, tzinfo=BERLIN)


def resolve(text: str, reference: datetime = SATURDAY) -> ResolvedTime:
    result = resolve_event_time(text, reference)
    assert result is not None, text
    return result


@pytest.mark.parametrize(
    ("text", "expected", "has_time"),
    [
        # today / tonight / tomorrow / yesterday
        ("Remind me to call mom tomorrow at 3", "2026-11-22T15:00:00+01:00", True),
        ("Lunch with Anna today", "2026-11-21T00:00:00+01:00", False),
        ("Party tonight!", "2026-11-21T20:00:00+01:00", True),
        ("Party tonight at 9", "2026-11-21T21:00:00+01:00", True),
        ("We fly the day after tomorrow", "2026-11-23T00:00:00+01:00", False),
        ("I saw her yesterday", "2026-11-20T00:00:00+01:00", False),
        ("It rained the day before yesterday", "2026-11-19T00:00:00+01:00", False),
        ("I slept badly last night", "2026-11-20T21:00:00+01:00", True),
        ("Jogging this morning was hard", "2026-11-21T09:00:00+01:00", True),
        # offsets
        ("The package arrives in two hours", "2026-11-21T16:30:00+01:00", True),
        ("Call back in 15 minutes", "2026-11-21T14:45:00+01:00", True),
        ("Check the oven in an hour", "2026-11-21T15:30:00+01:00", True),
        ("Food is ready in half an hour", "2026-11-21T15:00:00+01:00", True),
        ("The film starts in 90 mins", "2026-11-21T16:00:00+01:00", True),
        ("Results come in a week", "2026-11-28T00:00:00+01:00", False),
        ("Renew the passport in 3 months", "2027-02-21T00:00:00+01:00", False),
        ("We move in two years", "2028-11-21T00:00:00+01:00", False),
        ("We met 3 days ago", "2026-11-18T00:00:00+01:00", False),
        ("He called a week ago", "2026-11-14T00:00:00+01:00", False),
        ("Half an hour ago the power went out", "2026-11-21T14:00:00+01:00", True),
        ("Ping me two hours from now", "2026-11-21T16:30:00+01:00", True),
        ("Twenty-five minutes from now the bus leaves", "2026-11-21T14:55:00+01:00", True),
        ("The meeting ended forty five minutes ago", "2026-11-21T13:45:00+01:00", True),
        ("The invoice is due in 2 days at 5pm", "2026-11-23T17:00:00+01:00", True),
        # weekdays (the reference is a Saturday)
        ("Gym on Friday", "2026-11-27T00:00:00+01:00", False),
        ("Friday at 3pm we ship", "2026-11-27T15:00:00+01:00", True),
        ("Dinner this Friday", "2026-11-27T00:00:00+01:00", False),
        ("Brunch on Sunday", "2026-11-22T00:00:00+01:00", False),
        ("Dentist next Tuesday at 10am", "2026-11-24T10:00:00+01:00", True),
        ("Football next Saturday", "2026-11-28T00:00:00+01:00", False),
        ("Church next Sunday", "2026-11-29T00:00:00+01:00", False),
        ("I paid the rent last Monday", "2026-11-16T00:00:00+01:00", False),
        ("Last Saturday was fun", "2026-11-14T00:00:00+01:00", False),
        ("Market on Saturday", "2026-11-28T00:00:00+01:00", False),
        ("Concert Saturday at 5pm", "2026-11-21T17:00:00+01:00", True),
        ("Cinema on Saturday at 2pm", "2026-11-28T14:00:00+01:00", True),
        ("Movie night on Friday evening", "2026-11-27T19:00:00+01:00", True),
        ("Call Tor at 10am on Friday", "2026-11-27T10:00:00+01:00", True),
        # next week / month / year, weekends
        ("Start the diet next week", "2026-11-23T00:00:00+01:00", False),
        ("The rent goes up next month", "2026-12-01T00:00:00+01:00", False),
        ("Learn Spanish next year", "2027-01-01T00:00:00+01:00", False),
        ("Hiking this weekend", "2026-11-21T00:00:00+01:00", False),
        ("Visit grandma next weekend", "2026-11-28T00:00:00+01:00", False),
        # times of day
        ("Meet me at 3", "2026-11-21T15:00:00+01:00", True),
        ("Standup at 2", "2026-11-22T14:00:00+01:00", True),
        ("Meet me at 7", "2026-11-21T19:00:00+01:00", True),
        ("Yoga at 9 am", "2026-11-22T09:00:00+01:00", True),
        ("Pick up the kids at 5pm", "2026-11-21T17:00:00+01:00", True),
        ("Train leaves at 15:30", "2026-11-21T15:30:00+01:00", True),
        ("Tea at 3:30 p.m. with Boaz", "2026-11-21T15:30:00+01:00", True),
        ("Alarm at 07:30", "2026-11-22T07:30:00+01:00", True),
        ("Coffee at 11 o'clock", "2026-11-22T11:00:00+01:00", True),
        ("Lunch at noon", "2026-11-22T12:00:00+01:00", True),
        ("Fireworks at midnight", "2026-11-22T00:00:00+01:00", True),
        ("Water the plants in the morning", "2026-11-22T09:00:00+01:00", True),
        ("Nap in the afternoon", "2026-11-21T15:00:00+01:00", True),
        ("Read in the evening", "2026-11-21T19:00:00+01:00", True),
        ("Stars are bright at night", "2026-11-21T21:00:00+01:00", True),
        ("Wake me at 7 in the morning", "2026-11-22T07:00:00+01:00", True),
        ("Bakery tomorrow morning", "2026-11-22T09:00:00+01:00", True),
        ("Run tomorrow morning at 7", "2026-11-22T07:00:00+01:00", True),
        ("Party tomorrow night", "2026-11-22T21:00:00+01:00", True),
        ("Flight tomorrow 15:30", "2026-11-22T15:30:00+01:00", True),
        ("Dentist at 8 tomorrow", "2026-11-22T08:00:00+01:00", True),
        ("Meeting at 3pm tomorrow", "2026-11-22T15:00:00+01:00", True),
        ("Brunch the day after tomorrow at noon", "2026-11-23T12:00:00+01:00", True),
        ("Deadline is Friday at midnight", "2026-11-28T00:00:00+01:00", True),
        ("SHOUTING TOMORROW AT 3PM", "2026-11-22T15:00:00+01:00", True),
        # absolute dates
        ("Her birthday is on March 5", "2027-03-05T00:00:00+01:00", False),
        ("Conference 5 March", "2027-03-05T00:00:00+01:00", False),
        ("Interview March 5th at 10am", "2027-03-05T10:00:00+01:00", True),
        ("Flight on 2026-12-24", "2026-12-24T00:00:00+01:00", False),
        ("Holiday on the 25th of December", "2026-12-25T00:00:00+01:00", False),
        ("Wedding December 24th, 2027", "2027-12-24T00:00:00+01:00", False),
        ("Exam 5 March 2027 at 9", "2027-03-05T09:00:00+01:00", True),
        ("The fair opens on November 21", "2026-11-21T00:00:00+01:00", False),
        ("We go to Samoa in May", "2027-05-01T00:00:00+02:00", False),
        ("Garden party on May 3", "2027-05-03T00:00:00+02:00", False),
        ("Leap day on February 29", "2028-02-29T00:00:00+01:00", False),
        # a weekday and the date it falls on: the date says which one
        ("The recital is on Saturday 12 December at 7 pm", "2026-12-12T19:00:00+01:00", True),
        ("Boiler service Tuesday, 1 December at 9 am", "2026-12-01T09:00:00+01:00", True),
        ("Saturday the 12th of December", "2026-12-12T00:00:00+01:00", False),
        ("Call Tor at 10am on Friday, 11 December", "2026-12-11T10:00:00+01:00", True),
        ("next Friday, 2026-12-11 at 3pm", "2026-12-11T15:00:00+01:00", True),
    ],
)
def test_resolves_expressions(text: str, expected: str, has_time: bool) -> None:
    result = resolve(text)
    assert result.when.isoformat() == expected
    assert result.has_time is has_time
    assert result.when.tzinfo is BERLIN


@pytest.mark.parametrize(
    ("text", "expression"),
    [
        ("Remind me to call mom tomorrow at 3 please", "tomorrow at 3"),
        ("Dentist next Tuesday at 3pm.", "next Tuesday at 3pm"),
        ("Movie night on Friday evening, bring snacks", "on Friday evening"),
        ("The package arrives in two hours", "in two hours"),
        ("Call Tor at 10am on Friday", "at 10am on Friday"),
        ("Tea at 3:30 p.m. with Boaz", "at 3:30 p.m."),
        ("Lunch tomorrow, then a walk at 5pm", "tomorrow"),
        ("Her recital is on Saturday 12 December at 7 pm.", "on Saturday 12 December at 7 pm"),
        ("Saturday and Sunday we rest", "Saturday"),
    ],
)
def test_reports_the_matched_text(text: str, expression: str) -> None:
    assert resolve(text).expression == expression


@pytest.mark.parametrize(
    "text",
    [
        "",
        "I may go out",
        "Room 12 is free",
        "Upgrade to version 3",
        "It costs 3 dollars",
        "I'll be back in a second",
        "Good morning everyone",
        "Sundays are quiet",
        "Mayday, mayday",
        "She said 12/24 works",
        "Her birthday is February 30",
        "Meet at 25:00",
        "Use at 3.5 bar",
        "Live in 10000 years",
    ],
)
def test_returns_none_without_an_expression(text: str) -> None:
    assert resolve_event_time(text, SATURDAY) is None


@pytest.mark.parametrize(
    ("reference", "text", "expected"),
    [
        (datetime(2027, 1, 31, 10, 0, tzinfo=BERLIN), "in a month", "2027-02-28T00:00:00+01:00"),
        (datetime(2028, 1, 31, 10, 0, tzinfo=BERLIN), "in 1 month", "2028-02-29T00:00:00+01:00"),
        (datetime(2028, 2, 29, 10, 0, tzinfo=BERLIN), "in a year", "2029-02-28T00:00:00+01:00"),
        (datetime(2027, 3, 31, 10, 0, tzinfo=BERLIN), "a month ago", "2027-02-28T00:00:00+01:00"),
        (datetime(2027, 1, 31, 10, 0, tzinfo=BERLIN), "next month", "2027-02-01T00:00:00+01:00"),
    ],
)
def test_month_arithmetic_clamps(reference: datetime, text: str, expected: str) -> None:
    assert resolve(text, reference).when.isoformat() == expected


@pytest.mark.parametrize(
    ("reference", "text", "expected"),
    [
        # Berlin springs forward on Sunday 2026-03-29 at 02:00.
        (
            datetime(2026, 3, 28, 10, 0, tzinfo=BERLIN),
            "tomorrow at 10am",
            "2026-03-29T10:00:00+02:00",
        ),
        (datetime(2026, 3, 28, 10, 0, tzinfo=BERLIN), "in a day", "2026-03-29T00:00:00+01:00"),
        (datetime(2026, 3, 28, 10, 0, tzinfo=BERLIN), "in 24 hours", "2026-03-29T11:00:00+02:00"),
        (
            datetime(2026, 3, 28, 10, 0, tzinfo=BERLIN),
            "tomorrow at 2:30am",
            "2026-03-29T03:30:00+02:00",
        ),
        (datetime(2026, 3, 29, 1, 30, tzinfo=BERLIN), "in an hour", "2026-03-29T03:30:00+02:00"),
        # ... and falls back on Sunday 2026-10-25 at 03:00.
        (
            datetime(2026, 10, 24, 12, 0, tzinfo=BERLIN),
            "tomorrow at noon",
            "2026-10-25T12:00:00+01:00",
        ),
        (datetime(2026, 10, 25, 1, 30, tzinfo=BERLIN), "in 3 hours", "2026-10-25T03:30:00+01:00"),
    ],
)
def test_daylight_saving_changes(reference: datetime, text: str, expected: str) -> None:
    assert resolve(text, reference).when.isoformat() == expected


def test_keeps_the_reference_timezone() -> None:
    reference = datetime(2026, 11, 21, 14, 30, tzinfo=UTC)
    result = resolve("tomorrow at 3", reference)
    assert result.when.isoformat() == "2026-11-22T15:00:00+00:00"
    assert result.when.tzinfo is UTC


def test_rejects_a_naive_reference() -> None:
    with pytest.raises(ValueError):
        resolve_event_time("tomorrow at 3", datetime(2026, 11, 21, 14, 30))
