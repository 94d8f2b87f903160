"""The assistant's clock: the computer's local time, shifted when asked
(``heartbeat.clock_offset_minutes``) to try an evening of heartbeats by day."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from assistant.tasks.reminders import local_now


def shifted_clock(offset_minutes: float) -> Callable[[], datetime]:
    if not offset_minutes:
        return local_now
    offset = timedelta(minutes=offset_minutes)
    return lambda: local_now() + offset
