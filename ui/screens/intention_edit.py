"""One intention's text and due time, edited in a small window over the plans pane. The time
is read by the service as the user types it ("tomorrow at 9", "in 2 hours", "19:00"); what it
cannot read, or a time gone by, is said here in one line and the window stays open."""

from __future__ import annotations

from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from assistant.protocol.tasks import EditIntention, IntentionRow, Intentions
from ui.link import LinkError, ServiceLink

# How a due time is put in the box to start with: an ISO time the service reads back as is.
DUE_FORMAT = "%Y-%m-%d %H:%M"


class IntentionEditScreen(ModalScreen[Intentions | None]):
    """Dismissed with the service's answer once a change is saved, None when left as it was."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "dismiss(None)", "Cancel"),
        Binding("ctrl+s", "save", "Save", priority=True),
    ]

    def __init__(self, link: ServiceLink, row: IntentionRow) -> None:
        super().__init__()
        self.link = link
        self.row = row
        self.due_shown = row.due_at.astimezone().strftime(DUE_FORMAT)

    def compose(self) -> ComposeResult:
        with Vertical(id="intention-edit"):
            yield Label("Intention", id="intention-edit-title")
            yield Input(self.row.text, id="intention-text", max_length=300)
            yield Label("Due")
            yield Input(self.due_shown, id="intention-due")
            yield Static(
                "Enter or Ctrl+S saves, Esc leaves it as it was. The time as you would say "
                "it: 'tomorrow at 9', 'in 2 hours', '19:00', or 2026-12-24 18:00.",
                id="intention-edit-hint",
            )
            yield Label("", id="intention-edit-error")

    @on(Input.Submitted)
    def submitted(self) -> None:
        self.action_save()

    def action_save(self) -> None:
        text = self.query_one("#intention-text", Input).value.strip()
        due = self.query_one("#intention-due", Input).value.strip()
        request = EditIntention(
            ref="",
            id=self.row.id,
            text=text if text != self.row.text else None,
            due=due if due != self.due_shown else None,
        )
        if request.text is None and request.due is None:
            self.dismiss(None)
            return
        self._save(request)

    @work(exclusive=True, group="intention-edit")
    async def _save(self, request: EditIntention) -> None:
        try:
            answer = await self.link.ask(request, Intentions)
        except LinkError as error:
            self.query_one("#intention-edit-error", Label).update(f"Not saved: {error}")
            return
        self.dismiss(answer)
