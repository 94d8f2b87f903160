"""The memory table: one page of memories, a row each (kind, time, importance, source, text)."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from assistant.protocol.memory import MemoryRow

COLUMNS = (
    ("kind", "Kind", 11),
    ("when", "When", 16),
    ("importance", "Imp", 4),
    ("source", "Source", 18),  # "mcp:claude-desktop" whole
)
# The text column takes what the others leave; one line a memory.
TEXT_COLUMN = "text"

# What a row draws, comparable: a ``Text`` compares by its words, not its style.
Drawn = tuple[str | tuple[str, str], ...]
# Before the text of a flagged row (the plans pane: a plan made before the planner was held to
# what the user said about their time).
FLAG = "⚑ "


class MemoryTable(DataTable[Text | str]):
    """Rows are keyed by memory id; ``memories`` holds the memory behind each row, and the
    rows of the ids in ``flagged`` are marked."""

    def __init__(self, **options: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **options)  # type: ignore[arg-type]
        self.memories: dict[str, MemoryRow] = {}
        self.flagged: frozenset[str] = frozenset()
        self._drawn: list[tuple[str, Drawn]] = []

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)
        self.add_column("Memory", key=TEXT_COLUMN)

    def show(self, rows: list[MemoryRow], keep: str | None = None) -> None:
        """Replace the rows; the cursor stays on ``keep`` if it is still there."""
        self.memories = {row.id: row for row in rows}
        if self.shows(rows):
            # The same page asked for again (every time the screen is shown): refilling the
            # table would throw its rendered rows away and draw them all again.
            self._keep_cursor_on(keep)
            return
        self._drawn = drawn_page(rows, self.flagged)
        self.clear()
        widest = 0
        for row in rows:
            shown = cells(row, row.id in self.flagged)
            widest = max(widest, shown[-1].cell_len)
            self.add_row(*shown, key=row.id)
        # DataTable measures new rows when it is next idle; a frame drawn before that (a
        # loaded machine) cached the rows at the label's width ("User:"), for good.
        text = self.columns[ColumnKey(TEXT_COLUMN)]
        text.content_width = max(text.content_width, widest)
        self._keep_cursor_on(keep)

    def shows(self, rows: list[MemoryRow]) -> bool:
        """Whether the table draws exactly these rows, in this order, already."""
        return drawn_page(rows, self.flagged) == self._drawn

    def flag(self, ids: frozenset[str]) -> None:
        """Mark the rows of these memories (and only these), now and on later pages."""
        if ids != self.flagged:
            self.flagged = ids
            current = self.current
            self.show(list(self.memories.values()), current.id if current else None)

    def _keep_cursor_on(self, keep: str | None) -> None:
        if keep in self.memories:
            self.move_cursor(row=self.get_row_index(keep))

    @property
    def current(self) -> MemoryRow | None:
        """The memory under the cursor."""
        if not self.memories or self.cursor_row < 0 or self.cursor_row >= self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        return self.memories.get(key) if key is not None else None


def cells(row: MemoryRow, flagged: bool = False) -> tuple[str, str, Text, str, Text]:
    text = " ".join(row.text.split())
    marks = (
        (FLAG if flagged else "") + ("📌 " if row.pinned else "") + ("🗑 " if row.deleted else "")
    )
    importance = Text(str(row.importance), style="dim" if row.importance_state == "pending" else "")
    return (
        row.kind,
        when(row.created_at),
        importance,
        source_label(row.sources),
        Text(marks + text, style="strike" if row.deleted else ""),
    )


def drawn_page(rows: list[MemoryRow], flagged: frozenset[str]) -> list[tuple[str, Drawn]]:
    return [(row.id, drawn(row, row.id in flagged)) for row in rows]


def drawn(row: MemoryRow, flagged: bool) -> Drawn:
    return tuple(
        (cell.plain, str(cell.style)) if isinstance(cell, Text) else cell
        for cell in cells(row, flagged)
    )


def when(moment: datetime) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def source_label(sources: list[str]) -> str:
    if not sources:
        return ""
    first = sources[0].removeprefix("subagent:")
    more = f"+{len(sources) - 1}" if len(sources) > 1 else ""
    return first + more
