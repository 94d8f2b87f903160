"""How the memory screen responds with 100,000 memories: opening it, typing in its search box,
the search results, and paging.

    python -m benchmarks.memory_screen [--size 100000] [--rounds 20] [--json]

The memory is the one ``benchmarks.retrieval_scale`` builds (real MiniLM vectors, varied
personal-assistant texts; built on first use and cached), copied to a temporary data folder.
The terminal app runs headless (Textual's ``run_test``) and starts a real ``brain serve``
process on that folder, as ``brain`` does; the LLM endpoint is a closed port (nothing here
needs one). Then, measured in the app's process:

* ``open``: F2 pressed → the first page of 50 rows shown (the screen built, the request sent,
  the service's page answered, the table filled), ``--rounds`` times (Esc between);
* ``keystroke``: one key typed into the search box → the app has handled it and redrawn
  (``pilot.press`` returns once the app is idle), for every character of ``--rounds`` queries;
* ``search``: the typing pause ends (the screen waits 150 ms after the last key, not
  counted) → the results shown; the service's own share is printed beside it;
* ``page``: ``]`` pressed → the next page shown.

Goal (issue 6): opening the screen and each keystroke under 100 ms. Prints median, p95 and
p95 / 100 ms for each.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from assistant.config import load_config
from assistant.service.client import ServiceClient
from assistant.service.protocol import Stop
from benchmarks.retrieval_scale import (
    BenchEmbedder,
    default_cache,
    log,
    prepared,
    questions,
    real_embedder,
)
from benchmarks.stats import percentiles
from ui.app import BrainApp
from ui.screens.memory import MemoryScreen

GOAL_MS = 100.0
SIZE = (120, 40)


async def wait_for(condition: Any, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError("the app did not get there in time")
        await asyncio.sleep(0.002)


async def measure(app: BrainApp, pilot: Pilot[Any], rounds: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {
        "open": [],
        "keystroke": [],
        "search": [],
        "search_service": [],
        "page": [],
    }
    log("waiting for the service to open the memory")
    await wait_for(lambda: app.link.stats is not None, 600)
    log(f"service ready: {app.link.stats}")
    for _ in range(rounds + 1):  # the first opening warms caches: not counted
        screen = await open_screen(app, pilot)
        figures["open"].append(screen.first_page_ms)
        await pilot.press("escape")
    figures["open"] = figures["open"][1:]

    screen = await open_screen(app, pilot)
    for query in questions(rounds):
        await search(screen, pilot, "")
        for character in query:
            started = time.perf_counter()
            await pilot.press(character)
            figures["keystroke"].append((time.perf_counter() - started) * 1000)
        await shown(screen, query)
        figures["search"].append(screen.last_load_ms)
        figures["search_service"].append(screen.service_ms)
    await search(screen, pilot, "")
    await pilot.press("enter")  # back to the table
    for _ in range(rounds):
        pages = screen.loads
        await pilot.press("right_square_bracket")
        await wait_for(lambda: screen.loads > pages)  # noqa: B023 (awaited here, in the loop)
        figures["page"].append(screen.last_load_ms)
    return figures


async def open_screen(app: BrainApp, pilot: Pilot[Any]) -> MemoryScreen:
    await pilot.press("f2")
    screen = app.screen
    assert isinstance(screen, MemoryScreen)
    await wait_for(lambda: screen.loads > 0)
    return screen


async def search(screen: MemoryScreen, pilot: Pilot[Any], text: str) -> None:
    """Focus the search box, clear it, type ``text`` and wait for its results."""
    await pilot.press("slash", "ctrl+u", *text)
    await shown(screen, text)


async def shown(screen: MemoryScreen, text: str) -> None:
    await wait_for(lambda: screen.shown_query == text)


def summary(figures: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    report = {}
    for name, values in figures.items():
        shares = percentiles(values)
        report[name] = {
            "p50_ms": shares["p50"],
            "p95_ms": shares["p95"],
            "p95_vs_goal": shares["p95"] / GOAL_MS,
            "samples": len(values),
        }
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    folder, _ = prepared(default_cache(), args.size, BenchEmbedder(real_embedder()), False)
    with tempfile.TemporaryDirectory(prefix="memory-screen-") as temp:
        data = Path(temp) / "data"
        log(f"copying the {args.size:,}-record memory to {data}")
        shutil.copytree(folder / "data", data)
        loaded = load_config(
            {
                "data_dir": str(data),
                "cache_dir": str(load_config().settings.cache_dir),
                "llm.base_url": "http://127.0.0.1:9/v1",
                "voice.enabled": "false",
                "service.runtime_dir": str(Path(temp) / "run"),
            }
        )
        app = BrainApp(loaded)
        figures: dict[str, list[float]] = {}

        async def run() -> None:
            async with app.run_test(size=SIZE) as pilot:
                figures.update(await measure(app, pilot, args.rounds))
                await app.conversation.leave()
            client = await ServiceClient.connect(loaded, "benchmark", start=False)
            await client.send(Stop())
            await client.close()

        asyncio.run(run())
    report = summary(figures)
    if args.json:
        print(json.dumps(report))
    else:
        print(f"memory screen at {args.size:,} memories (goal: under {GOAL_MS:.0f} ms)")
        print("| step | p50 ms | p95 ms | p95 / goal | samples |")
        print("| --- | --- | --- | --- | --- |")
        for name, row in report.items():
            print(
                f"| {name} | {row['p50_ms']:.1f} | {row['p95_ms']:.1f} | "
                f"{row['p95_vs_goal']:.2f} | {row['samples']:.0f} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
