"""The Brain OS terminal app."""

from __future__ import annotations

from textual.app import App
from textual.binding import Binding

from assistant.llm.runtime import LLMRuntime
from assistant.settings import Settings
from ui.screens.conversation import ConversationScreen


class BrainApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "Brain OS"
    BINDINGS = [Binding("ctrl+q", "quit", "Quit", priority=True)]

    def __init__(self, settings: Settings, runtime: LLMRuntime | None = None) -> None:
        super().__init__()
        self.settings = settings
        self.runtime = runtime or LLMRuntime(settings)

    def on_mount(self) -> None:
        self.push_screen(ConversationScreen(self.runtime))

    def on_unmount(self) -> None:
        self.runtime.close()
