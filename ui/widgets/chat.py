"""The conversation: one widget per message, the assistant's filled in as it streams."""

from __future__ import annotations

from typing import Literal

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

Role = Literal["user", "assistant", "notice"]
LABELS: dict[Role, str] = {"user": "You", "assistant": "Brain", "notice": "!"}


class MessageView(Static):
    """One message. Text is shown literally: no markup from the model or the user is run."""

    def __init__(self, role: Role, text: str = "", note: str = "") -> None:
        super().__init__(classes=role)
        self.role: Role = role
        self.text = text
        self.note = note

    def on_mount(self) -> None:
        self.border_title = f"{LABELS[self.role]} · {self.note}" if self.note else LABELS[self.role]
        self._render_text()

    def append(self, fragment: str) -> None:
        self.text += fragment
        self._render_text()

    def set_text(self, text: str) -> None:
        self.text = text
        self._render_text()

    def _render_text(self) -> None:
        self.update(Text(self.text or "…"))


class ChatLog(VerticalScroll):
    """Scrolls to the newest message as it grows."""

    def add(self, role: Role, text: str = "", note: str = "") -> MessageView:
        view = MessageView(role, text, note)
        self.mount(view)
        self.scroll_end(animate=False)
        return view
