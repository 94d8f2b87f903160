"""The start-up line: what is being loaded, with a progress bar while weights are assembled."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Label, ProgressBar


class StartupStatus(Horizontal):
    def compose(self) -> ComposeResult:
        yield Label("starting…", id="status-text")
        yield ProgressBar(id="status-progress", show_eta=False)

    def on_mount(self) -> None:
        self.query_one(ProgressBar).display = False

    def show(self, text: str, state: str = "info") -> None:
        label = self.query_one("#status-text", Label)
        label.update(text)
        label.set_classes(state)

    def progress(self, label: str, done: int, total: int) -> None:
        bar = self.query_one(ProgressBar)
        bar.display = done < total
        bar.update(total=total, progress=done)
        self.show(label)
