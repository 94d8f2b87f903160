"""The memory screen: every memory in a table, with the agent's own search, filters, sort and
paging; pin, delete, restore and undo from the table, the rest in the detail screen.

Every change goes to the service (the memory API), which tells the agent before its next turn.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Checkbox, DataTable, Footer, Header, Input, Label, Select

from assistant.protocol.memory import (
    Kind,
    MemoryChangedByUser,
    MemoryDelete,
    MemoryDone,
    MemoryEdit,
    MemoryPage,
    MemoryQuery,
    MemoryStats,
    MemoryUndo,
    SortKey,
)
from ui.link import LinkError, ServiceLink
from ui.paging import TypingPause, page_after
from ui.screens.core_memory import CoreMemoryScreen
from ui.screens.entities import EntitiesScreen
from ui.screens.memory_detail import MemoryDetailScreen
from ui.widgets.memory_filters import MemoryFilters
from ui.widgets.memory_table import MemoryTable

PAGE_SIZE = 50
# How long the widgets of a screen laid out while hidden take to handle their new sizes.
RESIZED_AFTER_S = 0.1
# The orders "s" cycles through: (sort key, descending, how it reads).
SORTS: tuple[tuple[SortKey, bool, str], ...] = (
    ("created_at", True, "newest first"),
    ("created_at", False, "oldest first"),
    ("importance", True, "most important first"),
    ("last_accessed_at", True, "most recently used first"),
)
# Clicking a column header sorts by it.
HEADER_SORTS: dict[str, SortKey] = {"when": "created_at", "importance": "importance"}


class MemoryScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("slash", "focus_search", "Search", key_display="/"),
        Binding("e", "open(True)", "Edit"),
        Binding("p", "pin", "Pin/unpin"),
        Binding("d", "delete", "Delete/restore"),
        Binding("ctrl+z", "undo", "Undo"),
        Binding("s", "sort", "Sort"),
        Binding("left_square_bracket", "page(-1)", "Prev page", key_display="["),
        Binding("right_square_bracket", "page(1)", "Next page", key_display="]"),
        Binding("c", "core", "Core memory"),
        Binding("g", "graph", "Knowledge graph"),
    ]

    HINT = "Enter opens a memory · / searches"
    # The orders ``s`` cycles through, the first the default.
    SORTS = SORTS

    def __init__(self, link: ServiceLink, kinds: tuple[Kind, ...] = (), title: str = "Memory"):
        super().__init__()
        self.link = link
        self.kinds = kinds
        self.heading = title
        self.page = 1
        self.sort_index = 0
        self.total = 0
        # Pages shown since the screen opened, and how long the latest took from asking to
        # shown (benchmarks/memory_screen.py reads these).
        self.loads = 0
        self.last_load_ms = 0.0
        # The service's own time for the latest page, and the search text it answered.
        self.service_ms = 0.0
        self.shown_query = ""
        self._pause = TypingPause(self, self._search)
        # What the app looked like when this screen's widgets were last styled.
        self._styled_in: tuple[object, ...] | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield MemoryFilters(self.kinds, id="memory-filters")
        yield MemoryTable(id="memory-table")
        yield Label("loading…", id="memory-status")
        yield Footer()

    def on_mount(self) -> None:
        self.title = self.heading
        self.sub_title = self.HINT
        self.link.memory_changed.subscribe(self, self._changed_elsewhere)
        # Sent after each turn and as background work (ratings, reflection) moves: the agent
        # wrote or re-rated memories, maybe just after this page was read.
        self.link.stats_changed.subscribe(self, self._stats_changed)
        self.query_one(MemoryTable).focus()
        self._styled_in = self._look()
        if not self.is_current:  # built ahead of its first opening (BrainApp): rows ready too
            self.load()

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        """Shown (again): the rows it had stay on screen while the page is asked for anew."""
        # Textual restyles every widget of a screen it shows again, which also throws the
        # table's rendered rows away: half the time of reopening this screen. Its styles can
        # only have changed if the theme or the app's focus did while it was hidden.
        event.refresh_styles = self._styled_in != self._look()
        self.load(stay=True)

    def on_screen_suspend(self) -> None:
        self._styled_in = self._look()

    def _look(self) -> tuple[object, ...]:
        return (self.app.theme, self.app.ansi_color, self.app.app_focus)

    # Loading

    @property
    def is_loading(self) -> bool:
        """A page has been asked for and is not on screen yet."""
        return any(w.group == "memory-page" and not w.is_finished for w in self.workers)

    @work(exclusive=True, group="memory-page")
    async def load(self, stay: bool = False) -> None:
        """Ask for the current page; with ``stay`` the cursor stays on the memory it is on when
        the page arrives (the user may have moved it while the page was asked for)."""
        started = datetime.now(UTC)
        clock = time.perf_counter()
        filters = self.query_one(MemoryFilters)
        sort, descending, _ = self.SORTS[self.sort_index]
        request = MemoryQuery(
            ref="",
            query=filters.text,
            kinds=filters.kinds,
            sources=filters.sources,
            pinned=filters.pinned,
            since=filters.since(started),
            until=filters.until(),
            deleted=filters.deleted,
            sort=sort,
            descending=descending,
            page=self.page,
            page_size=PAGE_SIZE,
        )
        self._status("searching…" if request.query.strip() else "loading…")
        try:
            page = await self.link.ask(request, MemoryPage)
        except LinkError as error:
            self._status(f"could not load the memories: {error}", "error")
            return
        if not page.rows and page.total and self.page > 1:
            self.page = -(-page.total // PAGE_SIZE)  # the list shrank under this page
            self.load(stay)
            return
        self.total = page.total
        self.query_one(MemoryTable).show(page.rows, self._current_id() if stay else None)
        self.loads += 1
        self.last_load_ms = (time.perf_counter() - clock) * 1000
        self.service_ms = page.took_ms
        self.shown_query = request.query
        self._status(self._describe(page))
        if not self.is_current and self._size != self.app.size:
            self.call_after_refresh(self._draw_ahead)

    def _draw_ahead(self) -> None:
        """Lay this screen out and draw it while it is hidden (built ahead, or the window
        resized meanwhile): its first showing then repaints from what its widgets drew, which
        takes about half the time (the table's cells alone take about 40 ms on 2 cores).
        These are Textual's own steps when it shows a screen (Screen._on_screen_resume),
        minus putting the frame on the terminal; no public call does them."""
        if not self.is_current:
            self._refresh_layout(self.app.size)
            # Drawn once the widgets have taken their sizes: a resized table forgets its cells.
            self.set_timer(RESIZED_AFTER_S, self._draw_hidden)

    def _draw_hidden(self) -> None:
        if not self.is_current:
            self._compositor.render_update(full=True)

    def _describe(self, page: MemoryPage) -> str:
        if not page.total:
            return "no memories match" if self._filtered() else "no memories yet"
        first = (page.page - 1) * page.page_size + 1
        last = first + len(page.rows) - 1
        pages = -(-page.total // page.page_size)
        searched = self.query_one(MemoryFilters).text.strip()
        order = "by relevance" if searched else self.SORTS[self.sort_index][2]
        return (
            f"{first:,}-{last:,} of {page.total:,} · page {page.page}/{pages} · {order} · "
            f"{page.took_ms:.0f} ms"
        )

    def _filtered(self) -> bool:
        filters = self.query_one(MemoryFilters)
        return bool(
            filters.text.strip()
            or filters.sources
            or filters.pinned
            or filters.deleted
            or filters.until() is not None
            or filters.since(datetime.now(UTC)) is not None
        )

    def _status(self, text: str, state: str = "") -> None:
        label = self.query_one("#memory-status", Label)
        label.update(text)
        label.set_classes(state)

    def _changed_elsewhere(self, change: MemoryChangedByUser) -> None:
        self.load(stay=True)

    def _stats_changed(self, stats: MemoryStats) -> None:
        if self.is_current:  # shown again later, it reads its page then
            self.load(stay=True)

    def _current_id(self) -> str | None:
        row = self.query_one(MemoryTable).current
        return row.id if row is not None else None

    # Filters and search

    @on(Input.Changed, "#memory-search")
    def search_typed(self) -> None:
        self._pause.restart()

    def _search(self) -> None:
        self.page = 1
        self.load()

    @on(Input.Submitted, "#memory-search")
    def search_done(self) -> None:
        self.query_one(MemoryTable).focus()

    @on(Select.Changed)
    @on(Checkbox.Changed)
    def filters_changed(self) -> None:
        self._search()

    @on(DataTable.HeaderSelected)
    def header_clicked(self, event: DataTable.HeaderSelected) -> None:
        key = HEADER_SORTS.get(str(event.column_key.value))
        orders = [i for i, (sort, _, _) in enumerate(self.SORTS) if sort == key]
        if orders:
            # A second click on the same header gives its next order (newest, then oldest).
            at = orders.index(self.sort_index) if self.sort_index in orders else -1
            self.sort_index = orders[(at + 1) % len(orders)]
            self._search()

    # Actions

    def action_focus_search(self) -> None:
        self.query_one("#memory-search", Input).focus()

    def action_sort(self) -> None:
        self.sort_index = (self.sort_index + 1) % len(self.SORTS)
        self.notify(f"Sorted {self.SORTS[self.sort_index][2]}")
        self._search()

    def action_page(self, step: int) -> None:
        wanted = page_after(self.page, step, self.total, PAGE_SIZE)
        if wanted != self.page:
            self.page = wanted
            self.load()

    @on(DataTable.RowSelected, "#memory-table")
    def row_chosen(self) -> None:
        self.action_open()

    def action_open(self, edit: bool = False) -> None:
        row = self.query_one(MemoryTable).current
        if row is not None:  # the page is asked for again when this screen is back on top
            self.app.push_screen(MemoryDetailScreen(self.link, row.id, edit=edit))

    def action_core(self) -> None:
        self.app.push_screen(CoreMemoryScreen(self.link))

    def action_graph(self) -> None:
        self.app.push_screen(EntitiesScreen(self.link))

    async def action_pin(self) -> None:
        row = self.query_one(MemoryTable).current
        if row is not None:
            await self._change(MemoryEdit(ref="", id=row.id, pinned=not row.pinned))

    async def action_delete(self) -> None:
        row = self.query_one(MemoryTable).current
        if row is not None:
            await self._change(MemoryDelete(ref="", id=row.id, restore=row.deleted))

    async def action_undo(self) -> None:
        await self._change(MemoryUndo(ref=""))

    async def _change(self, request: MemoryEdit | MemoryDelete | MemoryUndo) -> None:
        try:
            done = await self.link.ask(request, MemoryDone)
        except LinkError as error:
            self.notify(f"Not changed: {error}", severity="error")
            return
        self.notify(done.text[:1].upper() + done.text[1:])
        # The list refreshes when the service announces the change to every window.
