"""The first-run screen: shown while the models' weights are assembled from their packages
(once, on a fresh machine), so the wait is explained rather than a bare progress bar."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, ProgressBar, Static

EXPLANATION = (
    "Brain OS runs its speech, language and memory models on this computer, offline. On the "
    "first start it assembles their weights from the installed packages and checks each one; "
    "this takes a few minutes, once. Later starts only verify them."
)


class FirstRunScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss", "Hide (progress stays in the status bar)"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.finished: list[str] = []
        # The latest progress, kept until the screen is mounted to show it.
        self.latest: tuple[str, int, int] | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="first-run"):
            yield Label("Setting up Brain OS", id="first-run-title")
            yield Static(EXPLANATION, id="first-run-text")
            yield Label("", id="first-run-item")
            yield ProgressBar(id="first-run-bar", show_eta=True)
            yield Static("", id="first-run-done")
            yield Label("Esc hides this; the conversation is behind it.", id="first-run-hint")

    def on_mount(self) -> None:
        if self.latest is not None:
            self._show(*self.latest)

    def progress(self, label: str, done: int, total: int) -> None:
        self.latest = (label, done, total)
        if done >= total and label not in self.finished:
            self.finished.append(label)
        if self.is_mounted:
            self._show(label, done, total)

    def _show(self, label: str, done: int, total: int) -> None:
        item = self.query_one("#first-run-item", Label)
        bar = self.query_one("#first-run-bar", ProgressBar)
        if str(item.render()) != label:
            item.update(label)
        bar.update(total=total, progress=done)
        self.query_one("#first-run-done", Static).update(
            "\n".join(f"✓ {name}" for name in self.finished[-8:])
        )
