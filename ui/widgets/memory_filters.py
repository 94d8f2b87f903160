"""The bar above the memory table: search (words and meaning) and the filters."""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Checkbox, Input, Select

from assistant.protocol.memory import KINDS, Kind

SOURCES = ("user", "assistant", "tool", "import", "vault")
PERIODS: dict[str, timedelta] = {
    "last 24 hours": timedelta(days=1),
    "last 7 days": timedelta(days=7),
    "last 30 days": timedelta(days=30),
    "last year": timedelta(days=365),
}


# "from:2026-03-01" and "to:2026-03-31" in the search box bound the time range (typed, not
# two more boxes, so the filters stay on one line above the table).
DAY_BOUND = re.compile(r"\b(from|to):(\S*)")


class MemoryFilters(Horizontal):
    """What the user asked the table to show; reads its controls, changes nothing itself."""

    def __init__(self, kinds: tuple[Kind, ...] = (), id: str | None = None) -> None:
        super().__init__(id=id)
        self.fixed_kinds = kinds

    def compose(self) -> ComposeResult:
        yield Input(
            placeholder="Search by words or meaning; from:YYYY-MM-DD to:YYYY-MM-DD",
            id="memory-search",
            compact=True,
        )
        if not self.fixed_kinds:
            yield choice(KINDS, "any kind", "filter-kind")
        yield choice(SOURCES, "any source", "filter-source")
        yield choice(tuple(PERIODS), "any time", "filter-time")
        yield Checkbox("pinned", id="filter-pinned", compact=True)
        yield Checkbox("deleted", id="filter-deleted", compact=True)

    @property
    def text(self) -> str:
        """What to search for: the search box without its from:/to: days."""
        return " ".join(DAY_BOUND.sub(" ", self.query_one("#memory-search", Input).value).split())

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
        first = self.day("from")
        if first is not None:
            starts.append(datetime.combine(first, time.min).astimezone())
        return max(starts, default=None)

    def until(self) -> datetime | None:
        """The end of the "to" day (local time)."""
        last = self.day("to")
        return datetime.combine(last, time.max).astimezone() if last is not None else None

    def day(self, bound: str) -> date | None:
        """The day after "from:" or "to:" in the search box; one that is not YYYY-MM-DD
        marks the box and is ignored."""
        box = self.query_one("#memory-search", Input)
        days = {name: text for name, text in DAY_BOUND.findall(box.value)}
        wrong = False
        for text in days.values():
            try:
                date.fromisoformat(text)
            except ValueError:
                wrong = True
        box.set_class(wrong, "-invalid")
        try:
            return date.fromisoformat(days[bound]) if bound in days else None
        except ValueError:
            return None

    @property
    def pinned(self) -> bool | None:
        return True if self.query_one("#filter-pinned", Checkbox).value else None

    @property
    def deleted(self) -> bool:
        return self.query_one("#filter-deleted", Checkbox).value


def choice(values: tuple[str, ...], prompt: str, name: str) -> Select[str]:
    return Select([(v, v) for v in values], prompt=prompt, id=name, compact=True)
