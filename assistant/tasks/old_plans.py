"""Plans the day planner made before it was held to what the user said about their time.

Until ``GROUNDED_SINCE`` (commit 5da99d7) a plan could be made from plain facts about people: a
sister's job became "Go to the library to study maths" (docs/TASKS.md, "The day plan"). Those
plans are not deleted by themselves: the plans pane marks them and the user clears them, and
clearing deletes them through the memory stream (soft: restorable, each delete in the history).
"""

from __future__ import annotations

from datetime import UTC, datetime

from assistant.tasks.day_plan import PLAN_SOURCE
from memory.records import MemoryRecord
from memory.stream import Filters, MemoryStream

# When the planner began to plan only from appointments, goals, reminders, tasks and what the
# user said they will do.
GROUNDED_SINCE = datetime(2026, 11, 27, 1, 48, tzinfo=UTC)
PAGE_SIZE = 500


def old_plans(stream: MemoryStream) -> list[MemoryRecord]:
    """The planner's live plan records made before ``GROUNDED_SINCE``, oldest first (the
    user's own plans, and any the user already deleted, are not among them)."""
    filters = Filters(kinds=("plan",), sources=(PLAN_SOURCE,), until=GROUNDED_SINCE)
    found: list[MemoryRecord] = []
    page = 1
    while True:
        listed = stream.list_memories(
            filters, sort="created_at", descending=False, page=page, page_size=PAGE_SIZE
        )
        # ``until`` lets a record made at the very moment in; it was made after the fix.
        found += [r for r in listed.items if r.created_at < GROUNDED_SINCE]
        if page >= listed.pages:
            return found
        page += 1


def clear_old_plans(stream: MemoryStream) -> int:
    """Delete the planner's plans made before ``GROUNDED_SINCE`` (the user asked); returns how
    many. Each is a soft delete kept in the history, so each can be restored or undone."""
    records = old_plans(stream)
    for record in records:
        stream.delete(record.id)
    return len(records)
