"""The Brain OS terminal app: a window onto the assistant service."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import Any

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from assistant.config import LoadedConfig
from ui.link import ServiceLink
from ui.screens.approval import Questions
from ui.screens.conversation import ConversationScreen
from ui.screens.memory import MemoryScreen
from ui.screens.plans import PlansScreen
from ui.screens.tasks import TasksScreen

PANES = [
    Binding("f2", "memory", "Memory", tooltip="Review, search and edit every memory"),
    Binding("f3", "plans", "Plans", tooltip="The day plan and other plans (plan memories)"),
    Binding("f4", "tasks", "Tasks", tooltip="What the service is working on"),
]


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
        # The memory panes stay alive when closed: opening one again shows its last page at
        # once and refreshes it (benchmarks/memory_screen.py).
        self.install_screen(MemoryScreen(self.link), "memory")
        self.install_screen(PlansScreen(self.link), "plans")
        self.push_screen(self.conversation)

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


def screen_commands(screen: Screen[Any]) -> Iterable[SystemCommand]:
    """A screen's own keys, for the command palette."""
    for binding in screen.BINDINGS:
        if isinstance(binding, Binding) and binding.description:
            yield SystemCommand(
                binding.description,
                f"{binding.tooltip or binding.description} ({screen.app.get_key_display(binding)})",
                partial(screen.run_action, binding.action),
            )
