"""The Brain OS terminal app: a window onto the assistant service."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Iterable
from functools import partial
from typing import Any

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from assistant.config import LoadedConfig
from assistant.garbage import settle_garbage, unsettle_garbage
from assistant.protocol.memory import MemoryStats
from ui.link import ServiceLink
from ui.screens.approval import Questions
from ui.screens.conversation import ConversationScreen
from ui.screens.memory import MemoryScreen
from ui.screens.plans import PlansScreen
from ui.screens.tasks import TasksScreen

# How often the app looks whether its terminal is still there (one isatty call).
TERMINAL_CHECK_S = 1.0
PANES = [
    Binding("f2", "memory", "Memory", tooltip="Review, search and edit every memory"),
    Binding("f3", "plans", "Plans", tooltip="The day plan and other plans (plan memories)"),
    Binding("f4", "tasks", "Tasks", tooltip="What the service is working on"),
]
# The panes that stay alive once built (installed screens).
KEPT_PANES = ("memory", "plans")


class BrainApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "Brain OS"
    BINDINGS = [Binding("ctrl+q", "quit", "Quit", priority=True), *PANES]

    def __init__(self, loaded: LoadedConfig) -> None:
        super().__init__()
        self.loaded = loaded
        self.link = ServiceLink(self)
        self.questions = Questions(self, self.link)
        self.conversation = ConversationScreen(loaded, self.link, self.questions)
        # What the service said when this window left: whether it keeps running, and why.
        self.farewell: str | None = None

    def on_mount(self) -> None:
        if not self.is_headless:
            loop = asyncio.get_running_loop()
            loop.add_signal_handler(signal.SIGHUP, terminal_gone)
            loop.add_signal_handler(signal.SIGTERM, self.exit)
            if on_a_terminal():
                # Run through `make run` the app is not the terminal's session leader, and a
                # closed window need not send it SIGHUP; the terminal it reads is hung up.
                self.set_interval(TERMINAL_CHECK_S, self._check_terminal)
        # The memory panes stay alive when closed: opening one again shows its last page at
        # once and refreshes it (benchmarks/memory_screen.py).
        self.install_screen(MemoryScreen(self.link), "memory")
        self.install_screen(PlansScreen(self.link), "plans")
        self.link.stats_changed.subscribe(self, self._memory_open)
        self.push_screen(self.conversation)

    def _memory_open(self, _: MemoryStats) -> None:
        """Build the memory panes as soon as the memory is open, while the conversation is
        on screen: building one takes a few hundred ms, its first opening then only shows it."""
        unbuilt = [pane for name in KEPT_PANES if (pane := self.get_screen(name)).parent is None]
        for pane in unbuilt:
            # What pushing a screen does first (it composes and mounts it), without showing
            # it; Textual has no public call for this.
            self._register(self, pane)
        if unbuilt:  # the window is up: what it holds now lives as long as it does
            settle_garbage()

    def on_unmount(self) -> None:
        unsettle_garbage()

    def _check_terminal(self) -> None:
        if not on_a_terminal():
            terminal_gone()

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for binding in PANES:
            yield SystemCommand(
                f"Open {binding.description}",
                f"{binding.tooltip} ({self.get_key_display(binding)})",
                partial(self.run_action, binding.action),
            )
        if isinstance(screen, ConversationScreen):
            yield from screen.commands()
        else:
            yield from screen_commands(screen)

    def action_memory(self) -> None:
        self._open("memory")

    def action_plans(self) -> None:
        self._open("plans")

    def action_tasks(self) -> None:
        self._open(TasksScreen(self.link, self.questions))

    def _open(self, pane: Screen[Any] | str) -> None:
        """Each pane opens over the conversation (Esc goes back), replacing another pane."""
        while len(self.screen_stack) > 2 and self.screen is not self.conversation:
            self.pop_screen()
        if self.screen is not self.conversation:
            self.switch_screen(pane)
        else:
            self.push_screen(pane)

    async def action_quit(self) -> None:
        left = await self.conversation.leave()
        if left is not None and left.stays:
            self.farewell = (
                f"The Brain OS service keeps running ({left.reason}); `brain stop` stops it."
            )
        self.exit(message=self.farewell)


def on_a_terminal() -> bool:
    """Whether the app's input is a terminal (no longer, once the terminal is hung up)."""
    stdin = sys.__stdin__
    return stdin is not None and os.isatty(stdin.fileno())


def terminal_gone() -> None:
    """The terminal closed under the app (its window, or the tmux server, went away). Nothing
    is left to draw on or restore, and Textual's own shutdown would wait for ever to write the
    terminal's reset to it (its writer thread died on the hung-up terminal and the queue to it
    fills), while the input thread spins on the closed terminal: seen as an orphaned `brain
    run` at 45-60 % of a core that ignored SIGTERM. Everything said is already with the
    service, so the window just ends."""
    os._exit(128 + signal.SIGHUP)


def screen_commands(screen: Screen[Any]) -> Iterable[SystemCommand]:
    """A screen's own keys, for the command palette."""
    for binding in screen.BINDINGS:
        if isinstance(binding, Binding) and binding.description:
            yield SystemCommand(
                binding.description,
                f"{binding.tooltip or binding.description} ({screen.app.get_key_display(binding)})",
                partial(screen.run_action, binding.action),
            )
