"""The Brain OS terminal app: a window onto the assistant service."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from assistant.config import LoadedConfig
from ui.screens.conversation import ConversationScreen


class BrainApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "Brain OS"
    BINDINGS = [Binding("ctrl+q", "quit", "Quit", priority=True)]

    def __init__(self, loaded: LoadedConfig) -> None:
        super().__init__()
        self.loaded = loaded
        # What the service said when this window left: whether it keeps running, and why.
        self.farewell: str | None = None

    def on_mount(self) -> None:
        self.push_screen(ConversationScreen(self.loaded))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if isinstance(screen, ConversationScreen):
            yield from screen.commands()

    async def action_quit(self) -> None:
        screen = self.screen
        left = await screen.leave() if isinstance(screen, ConversationScreen) else None
        if left is not None and left.stays:
            self.farewell = (
                f"The Brain OS service keeps running ({left.reason}); `brain stop` stops it."
            )
        self.exit(message=self.farewell)
