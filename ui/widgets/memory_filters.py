"""The bar above the memory table: search (words and meaning) and the filters."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Checkbox, Input, Select

from assistant.service.memory_wire import KINDS, Kind

SOURCES = ("user", "assistant", "tool", "import")
PERIODS: dict[str, timedelta] = {
    "last 24 hours": timedelta(days=1),
    "last 7 days": timedelta(days=7),
    "last 30 days": timedelta(days=30),
    "last year": timedelta(days=365),
}


class MemoryFilters(Vertical):
    """What the user asked the table to show; reads its controls, changes nothing itself."""

    def __init__(self, kinds: tuple[Kind, ...] = (), id: str | None = None) -> None:
        super().__init__(id=id)
        self.fixed_kinds = kinds

    def compose(self) -> ComposeResult:
        with Horizontal(classes="filter-row"):
            yield Input(placeholder="Search by words or meaning", id="memory-search", compact=True)
            if not self.fixed_kinds:
                yield choice(KINDS, "any kind", "filter-kind")
            yield choice(SOURCES, "any source", "filter-source")
        with Horizontal(classes="filter-row"):
            yield choice(tuple(PERIODS), "any time", "filter-time")
            yield day_input("from", "filter-from")
            yield day_input("to", "filter-to")
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
        """The later of the period chosen and the "from" day (its start, local time)."""
        value = self.query_one("#filter-time", Select).value
        starts = [now - PERIODS[value]] if isinstance(value, str) else []
        first = self.day("#filter-from")
        if first is not None:
            starts.append(datetime.combine(first, time.min).astimezone())
        return max(starts, default=None)

    def until(self) -> datetime | None:
        """The end of the "to" day (local time)."""
        last = self.day("#filter-to")
        return datetime.combine(last, time.max).astimezone() if last is not None else None

    def day(self, selector: str) -> date | None:
        """The day typed in a date box (YYYY-MM-DD); a box that holds something else is
        marked and ignored."""
        box = self.query_one(selector, Input)
        text = box.value.strip()
        try:
            day = date.fromisoformat(text) if text else None
        except ValueError:
            day = None
        box.set_class(bool(text) and day is None, "-invalid")
        return day

    @property
    def pinned(self) -> bool | None:
        return True if self.query_one("#filter-pinned", Checkbox).value else None

    @property
    def deleted(self) -> bool:
        return self.query_one("#filter-deleted", Checkbox).value


def choice(values: tuple[str, ...], prompt: str, name: str) -> Select[str]:
    return Select([(v, v) for v in values], prompt=prompt, id=name, compact=True)


def day_input(label: str, name: str) -> Input:
    return Input(placeholder=f"{label} YYYY-MM-DD", id=name, max_length=10, compact=True)
