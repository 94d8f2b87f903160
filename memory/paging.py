"""Paged results, as the agent's recall_search / archival_search and the UI show them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    items: tuple[T, ...]
    total: int
    page: int
    page_size: int

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.page_size))

    def describe(self) -> str:
        """e.g. 'showing 10 of 124 (page 2/13)'."""
        return f"showing {len(self.items)} of {self.total} (page {self.page}/{self.pages})"


def page_bounds(page: int, page_size: int) -> tuple[int, int]:
    """Offset and limit for a 1-based page number."""
    if page < 1 or page_size < 1:
        raise ValueError("page and page_size start at 1")
    return (page - 1) * page_size, page_size
