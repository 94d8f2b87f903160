"""The plans pane: the memory screen on plan memories (the day plan and its finer chunks,
editable like any memory), with two keys of its own: re-plan the rest of the day, and break the
selected chunk into finer ones (an hour into 5-15 minute steps). Both ask the LLM, so they run
in a worker and say when they are done."""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.binding import Binding, BindingType

from assistant.protocol.tasks import PlanDay, PlanDone
from ui.link import LinkError, ServiceLink
from ui.screens.memory import MemoryScreen
from ui.widgets.memory_table import MemoryTable

# A plan is one LLM request on the background model: slow on a small machine.
PLAN_TIMEOUT_S = 300.0


class PlansScreen(MemoryScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        *MemoryScreen.BINDINGS,
        Binding("r", "replan", "Re-plan the day"),
        Binding("b", "break_down", "Break down"),
    ]

    HINT = "r re-plans the day · b breaks a chunk down · Enter opens one"
    # In the day's order first (by each chunk's start), then the memory screen's orders.
    SORTS = (("event_time", False, "in the day's order"), *MemoryScreen.SORTS)

    def __init__(self, link: ServiceLink) -> None:
        super().__init__(link, kinds=("plan",), title="Plans")

    def action_replan(self) -> None:
        self.notify("Re-planning the rest of the day…")
        self._plan(PlanDay(ref="", action="replan"))

    def action_break_down(self) -> None:
        row = self.query_one(MemoryTable).current
        if row is None:
            self.notify("Select a plan chunk to break down.")
            return
        self.notify("Breaking it down…")
        self._plan(PlanDay(ref="", action="break_down", id=row.id))

    @work(group="plan")
    async def _plan(self, request: PlanDay) -> None:
        try:
            done = await self.link.ask(request, PlanDone, PLAN_TIMEOUT_S)
        except LinkError as error:
            self.notify(f"No new plan: {error}", severity="error")
            return
        self.notify(done.text[:1].upper() + done.text[1:])
        self.load(self._current_id())
