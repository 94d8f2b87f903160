"""A yes-or-no question before something the user may regret: No has the focus, so Enter alone
does nothing."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "dismiss(True)", "Yes"),
        Binding("n", "dismiss(False)", "No"),
        Binding("escape", "dismiss(False)", "No"),
    ]

    AUTO_FOCUS = "#confirm-no"

    def __init__(self, question: str, yes: str) -> None:
        super().__init__()
        self.question = question
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Static(self.question, id="confirm-question", markup=False)
            with Horizontal(id="confirm-buttons"):
                yield Button(f"{self.yes} (y)", id="confirm-yes", variant="warning")
                yield Button("No (n)", id="confirm-no", variant="primary")

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm-yes")
