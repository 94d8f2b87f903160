"""How a memory shown with a message says when it was written: today's and yesterday's by
the day's name (the model is told no date), older ones by their date."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from assistant.agent.tools import memories_block, memory_day
from memory.records import MemoryRecord

NOW = datetime(2026, 6, 10, 15, 0, tzinfo=UTC)


def test_today_and_yesterday_are_named_and_older_days_dated() -> None:
    local = NOW.astimezone()
    assert memory_day(NOW - timedelta(minutes=5), NOW) == "today"
    assert memory_day(NOW - timedelta(days=1), NOW) == "yesterday"
    older = NOW - timedelta(days=2)
    assert memory_day(older, NOW) == older.astimezone().date().isoformat()
    # The user's day: a memory from before their midnight is yesterday's.
    midnight = local.replace(hour=0, minute=0, second=0, microsecond=0)
    assert memory_day(midnight - timedelta(minutes=1), midnight + timedelta(minutes=1)) == (
        "yesterday"
    )


def record(text: str, written: datetime) -> MemoryRecord:
    return MemoryRecord(str(written), text, "observation", written, written, 5, ())


def test_the_block_shows_each_memory_with_its_day() -> None:
    written = datetime(2025, 5, 3, 12, tzinfo=UTC)
    records = [
        record("User: I keep bees on the roof.", NOW - timedelta(hours=1)),
        record("User: The hives came in May.", written),
    ]
    lines = memories_block(records, "my bees", NOW).splitlines()[1:]
    assert lines == [
        "- (today) User: I keep bees on the roof.",
        f"- ({written.astimezone().date().isoformat()}) User: The hives came in May.",
    ]
