"""The knowledge graph's entities (people, places, things the assistant learnt facts about),
most facts first, with a search by name; Enter opens one."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input, Label

from assistant.protocol.graph import EntityPage, EntityQuery, EntityRow
from assistant.protocol.memory import MemoryChangedByUser
from ui.link import LinkError, ServiceLink
from ui.paging import TypingPause, page_after
from ui.screens.entity import EntityScreen

PAGE_SIZE = 50


class EntitiesScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("slash", "focus_search", "Search", key_display="/"),
        Binding("left_square_bracket", "page(-1)", "Prev page", key_display="["),
        Binding("right_square_bracket", "page(1)", "Next page", key_display="]"),
    ]

    def __init__(self, link: ServiceLink) -> None:
        super().__init__()
        self.link = link
        self.page = 1
        self.total = 0
        self.rows: list[EntityRow] = []
        self._pause = TypingPause(self, self._search)

    def compose(self) -> ComposeResult:
        yield Header()
        yield Input(placeholder="Search entities by name…", id="entity-search")
        yield DataTable[Text](id="entity-table", cursor_type="row", zebra_stripes=True)
        yield Label("loading…", id="entity-status")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "Knowledge graph"
        self.sub_title = "Enter opens an entity · / searches"
        table = self.query_one("#entity-table", DataTable)
        table.add_column("Entity", key="name", width=28)
        table.add_column("Also called", key="aliases", width=30)
        table.add_column("Facts", key="current", width=6)
        table.add_column("Past", key="past", width=5)
        self.link.memory_changed.subscribe(self, self._changed_elsewhere)
        table.focus()

    def on_screen_resume(self) -> None:
        self.load()

    @work(exclusive=True, group="entity-page")
    async def load(self) -> None:
        query = self.query_one("#entity-search", Input).value
        request = EntityQuery(ref="", query=query, page=self.page, page_size=PAGE_SIZE)
        try:
            page = await self.link.ask(request, EntityPage)
        except LinkError as error:
            self._status(f"could not load the knowledge graph: {error}", "error")
            return
        self.total, self.rows = page.total, page.rows
        table = self.query_one("#entity-table", DataTable)
        table.clear()
        for row in page.rows:
            table.add_row(
                Text(row.name),
                Text(", ".join(row.aliases)),
                Text(str(row.current)),
                Text(str(row.past)),
                key=row.id,
            )
        self._status(self._describe(page))

    def _describe(self, page: EntityPage) -> str:
        if not page.total:
            if self.query_one("#entity-search", Input).value.strip():
                return "no entity has that name"
            return "no facts learnt yet (the assistant learns them in the background)"
        first = (page.page - 1) * page.page_size + 1
        pages = -(-page.total // page.page_size)
        return f"{first}-{first + len(page.rows) - 1} of {page.total} · page {page.page}/{pages}"

    def _status(self, text: str, state: str = "") -> None:
        label = self.query_one("#entity-status", Label)
        label.update(text)
        label.set_classes(state)

    def _changed_elsewhere(self, change: MemoryChangedByUser) -> None:
        self.load()

    @on(Input.Changed, "#entity-search")
    def search_typed(self) -> None:
        self._pause.restart()

    def _search(self) -> None:
        self.page = 1
        self.load()

    @on(Input.Submitted, "#entity-search")
    def search_done(self) -> None:
        self.query_one("#entity-table", DataTable).focus()

    @on(DataTable.RowSelected, "#entity-table")
    def entity_chosen(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.app.push_screen(EntityScreen(self.link, event.row_key.value))

    def action_focus_search(self) -> None:
        self.query_one("#entity-search", Input).focus()

    def action_page(self, step: int) -> None:
        wanted = page_after(self.page, step, self.total, PAGE_SIZE)
        if wanted != self.page:
            self.page = wanted
            self.load()
