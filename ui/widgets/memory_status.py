"""The status bar's memory part: how many memories are kept, and background memory work."""

from __future__ import annotations

from textual.widgets import Label

from assistant.protocol.memory import MemoryStats


class MemoryStatus(Label):
    def show(self, stats: MemoryStats | None) -> None:
        if stats is None:
            self.update("")
            return
        parts = [f"{stats.count:,} {'memory' if stats.count == 1 else 'memories'}"]
        if stats.ratings_pending:
            parts.append(f"rating {stats.ratings_pending}")
        if stats.reflecting:
            parts.append("reflecting")
        self.update(" · ".join(parts))
        self.set_class(bool(stats.ratings_pending or stats.reflecting), "busy")
