"""One memory in full: edit its text, importance and pin; delete or restore it; walk the tree
of memories a reflection cites (Enter opens one); read its change history and undo a change."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Checkbox, DataTable, Footer, Header, Input, Label, TextArea, Tree

from assistant.protocol.memory import (
    ChangeRow,
    Evidence,
    MemoryDelete,
    MemoryDetail,
    MemoryDone,
    MemoryEdit,
    MemoryOpen,
    MemoryRow,
    MemoryUndo,
)
from ui.link import LinkError, ServiceLink
from ui.widgets.memory_table import source_label, when


class MemoryDetailScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back"),
        Binding("ctrl+s", "save", "Save", priority=True),
        Binding("ctrl+d", "delete", "Delete/restore", priority=True),
        # Not a priority key: in the text box, Ctrl+Z undoes typing.
        Binding("ctrl+z", "undo", "Undo change"),
    ]

    def __init__(self, link: ServiceLink, record_id: str, edit: bool = False) -> None:
        super().__init__()
        self.link = link
        self.record_id = record_id
        self.edit = edit
        self.row: MemoryRow | None = None
        self.changes: list[ChangeRow] = []

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="detail"):
            yield Label("loading…", id="detail-meta")
            yield TextArea(id="detail-text", soft_wrap=True)
            with Horizontal(id="detail-controls"):
                yield Label("Importance (1-10)")
                yield Input(id="detail-importance", type="integer", max_length=2, compact=True)
                yield Checkbox("pinned", id="detail-pinned", compact=True)
            yield Label("Cites", classes="detail-heading", id="evidence-heading")
            yield Tree[str]("", id="detail-evidence")
            yield Label(
                "History (Ctrl+Z here undoes the selected change)", classes="detail-heading"
            )
            yield DataTable[str](id="detail-history", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "Memory"
        history = self.query_one("#detail-history", DataTable)
        history.add_columns("When", "Change", "Before", "After", "")
        self.refresh_detail()

    @work(exclusive=True, group="memory-detail")
    async def refresh_detail(self) -> None:
        try:
            detail = await self.link.ask(MemoryOpen(ref="", id=self.record_id), MemoryDetail)
        except LinkError as error:
            self.query_one("#detail-meta", Label).update(f"could not open the memory: {error}")
            return
        self._show(detail)

    def _show(self, detail: MemoryDetail) -> None:
        row = self.row = detail.evidence.row
        self.changes = detail.changes
        self.query_one("#detail-meta", Label).update(describe(row))
        text = self.query_one("#detail-text", TextArea)
        text.text = row.text
        self.query_one("#detail-importance", Input).value = str(row.importance)
        self.query_one("#detail-pinned", Checkbox).value = row.pinned
        tree = self.query_one("#detail-evidence", Tree)
        tree.clear()
        tree.root.set_label(one_line(row))
        tree.root.data = row.id
        grow(tree.root, detail.evidence.cites)
        tree.root.expand_all()
        shown = bool(detail.evidence.cites)
        tree.display = shown
        self.query_one("#evidence-heading").display = shown
        history = self.query_one("#detail-history", DataTable)
        history.clear()
        for change in detail.changes:
            history.add_row(*change_cells(change), key=change.id)
        if self.edit:
            text.focus()
            self.edit = False

    @on(Tree.NodeSelected, "#detail-evidence")
    def cited_chosen(self, event: Tree.NodeSelected[str]) -> None:
        record_id = event.node.data
        if record_id and record_id != self.record_id:
            self.app.push_screen(MemoryDetailScreen(self.link, record_id))

    # Actions

    def action_close(self) -> None:
        self.dismiss(None)

    async def action_save(self) -> None:
        row = self.row
        if row is None:
            return
        text = self.query_one("#detail-text", TextArea).text
        importance_text = self.query_one("#detail-importance", Input).value.strip()
        try:
            importance = int(importance_text)
        except ValueError:
            importance = 0
        if not 1 <= importance <= 10:
            self.notify("Importance is a whole number from 1 to 10.", severity="error")
            return
        pinned = self.query_one("#detail-pinned", Checkbox).value
        request = MemoryEdit(
            ref="",
            id=row.id,
            text=text if text.strip() != row.text else None,
            importance=importance if importance != row.importance else None,
            pinned=pinned if pinned != row.pinned else None,
        )
        if request.text is None and request.importance is None and request.pinned is None:
            self.notify("Nothing changed.")
            return
        await self._change(request)

    async def action_delete(self) -> None:
        if self.row is not None:
            await self._change(MemoryDelete(ref="", id=self.row.id, restore=self.row.deleted))

    async def action_undo(self) -> None:
        history = self.query_one("#detail-history", DataTable)
        row = history.cursor_row
        chosen = self.changes[row] if 0 <= row < len(self.changes) else None
        if chosen is None or chosen.undone:
            chosen = next((c for c in self.changes if not c.undone and c.action != "undo"), None)
        if chosen is None:
            self.notify("Nothing to undo for this memory.")
            return
        await self._change(MemoryUndo(ref="", change_id=chosen.id))

    async def _change(self, request: MemoryEdit | MemoryDelete | MemoryUndo) -> None:
        try:
            done = await self.link.ask(request, MemoryDone)
        except LinkError as error:
            # What was typed stays on screen, so nothing is lost.
            self.notify(f"Not saved: {error}", severity="error")
            return
        self.notify(done.text[:1].upper() + done.text[1:])
        self.refresh_detail()


def describe(row: MemoryRow) -> Text:
    parts = [
        row.kind,
        f"created {when(row.created_at)}",
        f"last used {when(row.last_accessed_at)}",
        f"source {source_label(row.sources) or 'unknown'}",
        f"importance {row.importance} ({row.importance_state})",
    ]
    if row.event_time is not None:
        parts.insert(2, f"about {when(row.event_time)}")
    text = Text(" · ".join(parts))
    if row.pinned:
        text.append(" · pinned", style="bold")
    if row.deleted:
        text.append(" · deleted (Ctrl+D restores)", style="bold red")
    return text


def one_line(row: MemoryRow) -> Text:
    """A tree label (a Text, so brackets in a memory are not read as markup)."""
    text = " ".join(row.text.split())
    return Text(f"[{row.kind}] {text[:100]}{'…' if len(text) > 100 else ''}")


def grow(node: object, cites: list[Evidence]) -> None:
    for cited in cites:
        child = node.add(one_line(cited.row), data=cited.row.id)  # type: ignore[attr-defined]
        if cited.cites:
            grow(child, cited.cites)
        else:
            child.allow_expand = False


def change_cells(change: ChangeRow) -> tuple[str, ...]:
    fields = sorted(
        name
        for name in set(change.before) | set(change.after)
        if change.before.get(name) != change.after.get(name)
    )
    before = "; ".join(f"{f}: {change.before[f]}" for f in fields if f in change.before)
    after = "; ".join(f"{f}: {change.after[f]}" for f in fields if f in change.after)
    return (
        when(change.at),
        change.action,
        before[:60],
        after[:60],
        "undone" if change.undone else "",
    )
