"""The bar above the memory table: search (words and meaning) and the filters."""

from __future__ import annotations

from datetime import datetime, timedelta

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Checkbox, Input, Select

from assistant.service.memory_wire import KINDS, Kind

SOURCES = ("user", "assistant", "tool", "import")
PERIODS: dict[str, timedelta] = {
    "last 24 hours": timedelta(days=1),
    "last 7 days": timedelta(days=7),
    "last 30 days": timedelta(days=30),
    "last year": timedelta(days=365),
}


class MemoryFilters(Horizontal):
    """What the user asked the table to show; reads its controls, changes nothing itself."""

    def __init__(self, kinds: tuple[Kind, ...] = (), id: str | None = None) -> None:
        super().__init__(id=id)
        self.fixed_kinds = kinds

    def compose(self) -> ComposeResult:
        yield Input(placeholder="Search by words or meaning", id="memory-search", compact=True)
        if not self.fixed_kinds:
            yield choice(KINDS, "any kind", "filter-kind")
        yield choice(SOURCES, "any source", "filter-source")
        yield choice(tuple(PERIODS), "any time", "filter-time")
        yield Checkbox("pinned", id="filter-pinned", compact=True)
        yield Checkbox("deleted", id="filter-deleted", compact=True)

    @property
    def text(self) -> str:
        return self.query_one("#memory-search", Input).value

    @property
    def kinds(self) -> list[Kind] | None:
        if self.fixed_kinds:
            return list(self.fixed_kinds)
        value = self.query_one("#filter-kind", Select).value
        return [value] if isinstance(value, str) and value in KINDS else None  # type: ignore[list-item]

    @property
    def sources(self) -> list[str] | None:
        value = self.query_one("#filter-source", Select).value
        return [value] if isinstance(value, str) else None

    def since(self, now: datetime) -> datetime | None:
        value = self.query_one("#filter-time", Select).value
        return now - PERIODS[value] if isinstance(value, str) else None

    @property
    def pinned(self) -> bool | None:
        return True if self.query_one("#filter-pinned", Checkbox).value else None

    @property
    def deleted(self) -> bool:
        return self.query_one("#filter-deleted", Checkbox).value


def choice(values: tuple[str, ...], prompt: str, name: str) -> Select[str]:
    return Select([(v, v) for v in values], prompt=prompt, id=name, compact=True)
