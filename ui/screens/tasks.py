"""The tasks pane: the work the service holds (the reply being written, turns waiting,
memories waiting to be rated, an endpoint switch), refreshed every second; Ctrl+X stops the
reply being written. Delegated sub-agent tasks will show here when they exist."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Label

from assistant.service.protocol import Cancel, GetTasks, Tasks
from ui.link import LinkError, ServiceLink

REFRESH_S = 1.0


class TasksScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("ctrl+x", "cancel", "Stop the reply"),
    ]

    def __init__(self, link: ServiceLink) -> None:
        super().__init__()
        self.link = link
        self.latest: Tasks | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable[str](id="tasks-table", cursor_type="row")
        yield Label("asking the service…", id="tasks-status")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "Tasks"
        self.sub_title = "What the service is doing; it goes on when this window closes"
        self.query_one(DataTable).add_columns("Kind", "What", "Elapsed")
        self.link.tasks.subscribe(self, self._show)
        self.set_interval(REFRESH_S, self.ask)
        self.call_later(self.ask)

    async def ask(self) -> None:
        try:
            await self.link.send(GetTasks())
        except LinkError as error:
            self.query_one("#tasks-status", Label).update(f"not connected: {error}")

    def _show(self, tasks: Tasks) -> None:
        self.latest = tasks
        table = self.query_one(DataTable)
        cursor = table.cursor_row
        table.clear()
        for work in tasks.work:
            elapsed = f"{work.seconds:.0f} s" if work.seconds else ""
            table.add_row(work.kind, work.description, elapsed)
        if table.row_count:
            table.move_cursor(row=min(cursor, table.row_count - 1))
        count = len(tasks.work)
        self.query_one("#tasks-status", Label).update(
            "nothing running" if not count else f"{count} item{'s' if count > 1 else ''}"
        )

    async def action_cancel(self) -> None:
        if self.latest is None or not any(w.kind == "reply" for w in self.latest.work):
            self.notify("No reply is being written.")
            return
        try:
            await self.link.send(Cancel())
        except LinkError as error:
            self.notify(f"Not stopped: {error}", severity="error")
