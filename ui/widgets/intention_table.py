"""The agent's intentions (what it means to come back to at a time), a row each: when it is
due, its status, its text and who kept it. Its keys say what the user wants done with the
selected one; the screen carries it out (a message each)."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import DataTable

from assistant.protocol.tasks import IntentionRow, IntentionStatus

COLUMNS = (("due", "Due", 16), ("status", "Status", 9), ("source", "Kept by", 8))
TEXT_COLUMN = "text"
STYLES: dict[IntentionStatus, str] = {"pending": "", "done": "dim", "cancelled": "dim strike"}


class IntentionTable(DataTable[Text | str]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "edit", "Edit intention"),
        Binding("enter", "edit", "Edit intention", show=False),
        # Pressed again on a settled one, each makes it pending again (a slip is undone).
        Binding("x", "settle('done')", "Done/reopen"),
        Binding("n", "settle('cancelled')", "Cancel/reopen"),
    ]

    class Edit(Message):
        """The user wants to change this intention's text or time."""

        def __init__(self, row: IntentionRow) -> None:
            super().__init__()
            self.row = row

    class Settle(Message):
        """The user wants this intention to have this status."""

        def __init__(self, row: IntentionRow, status: IntentionStatus) -> None:
            super().__init__()
            self.row = row
            self.status = status

    def __init__(self, **options: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **options)  # type: ignore[arg-type]
        self.intentions: dict[str, IntentionRow] = {}

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)
        self.add_column("Intention", key=TEXT_COLUMN)

    def show(self, rows: list[IntentionRow], keep: str | None = None) -> None:
        """Replace the rows; the cursor stays on ``keep`` (else the selected one) if it is
        still there."""
        current = self.current
        keep = keep or (current.id if current else None)
        self.intentions = {row.id: row for row in rows}
        self.clear()
        for row in rows:
            self.add_row(*cells(row), key=row.id)
        if keep in self.intentions:
            self.move_cursor(row=self.get_row_index(keep))

    @property
    def current(self) -> IntentionRow | None:
        """The intention under the cursor."""
        if not self.intentions or not 0 <= self.cursor_row < self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        return self.intentions.get(key) if key is not None else None

    def action_edit(self) -> None:
        if (row := self.current) is not None:
            self.post_message(self.Edit(row))

    def action_settle(self, status: IntentionStatus) -> None:
        if (row := self.current) is not None:
            self.post_message(self.Settle(row, "pending" if row.status == status else status))


def cells(row: IntentionRow) -> tuple[str, str, str, Text]:
    style = STYLES[row.status]
    return (due(row.due_at), row.status, row.source, Text(row.text, style=style))


def due(moment: datetime) -> str:
    return moment.astimezone().strftime("%a %d %b %H:%M")
