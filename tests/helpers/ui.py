"""Driving the terminal app in tests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable


async def wait_for(condition: Callable[[], object], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        await asyncio.sleep(0.02)
