"""The plans pane: the memory screen on plan memories (the day plan and its finer chunks,
editable like any memory), with two keys of its own: re-plan the rest of the day, and break the
selected chunk into finer ones (an hour into 5-15 minute steps). Both ask the LLM, so they run
in a worker and say when they are done.

Below the plans, the agent's intentions (what it means to come back to, with their due time),
edited, done or cancelled from their own table. Plans the planner made before it was held to
what the user said about their time are flagged, and one key clears them all (after asking:
they are deleted softly, restorable on the memory screen)."""

from __future__ import annotations

from typing import ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Label

from assistant.protocol.memory import MemoryStats
from assistant.protocol.tasks import (
    ClearOldPlans,
    GetIntentions,
    GetOldPlans,
    Intentions,
    OldPlans,
    PlanDay,
    PlanDone,
    SettleIntention,
)
from ui.link import LinkError, ServiceLink
from ui.screens.confirm import ConfirmScreen
from ui.screens.intention_edit import IntentionEditScreen
from ui.screens.memory import MemoryScreen
from ui.widgets.intention_table import IntentionTable
from ui.widgets.memory_table import FLAG, MemoryTable

# A plan is one LLM request on the background model: slow on a small machine.
PLAN_TIMEOUT_S = 300.0
INTENTIONS_HINT = (
    "Intentions: what the assistant means to come back to · e edits · x done · n cancels "
    "(again: reopens) · i back to the plans"
)


class PlansScreen(MemoryScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        *MemoryScreen.BINDINGS,
        Binding("r", "replan", "Re-plan the day"),
        Binding("b", "break_down", "Break down"),
        Binding("i", "switch_table", "Plans/intentions"),
        Binding("o", "clear_old", "Clear old plans"),
    ]

    HINT = "r re-plans the day · b breaks a chunk down · Enter opens one · i intentions"
    # In the day's order first (by each chunk's start), then the memory screen's orders.
    SORTS = (("event_time", False, "in the day's order"), *MemoryScreen.SORTS)

    def __init__(self, link: ServiceLink) -> None:
        super().__init__(link, kinds=("plan",), title="Plans")
        # The plans made before the planner was held to the user's time, and that time.
        self.old: OldPlans | None = None

    def compose(self) -> ComposeResult:
        # The header and footer are docked, so these go between the plans and the footer.
        yield from super().compose()
        yield Label("", id="old-plans")
        yield Label("Intentions", id="intentions-heading")
        yield IntentionTable(id="intention-table")
        yield Label(INTENTIONS_HINT, id="intentions-status")

    def on_mount(self) -> None:
        # The memory screen's own on_mount runs too (Textual calls each class's handler).
        self.query_one("#old-plans", Label).display = False
        self.link.stats_changed.subscribe(self, self._refresh_beside)
        if not self.is_current:
            self.load_beside()

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        # The plans table is asked for again by the memory screen's own handler (Textual
        # calls both).
        self.load_beside()

    def _refresh_beside(self, stats: MemoryStats) -> None:
        # Sent after each turn (the agent may have kept an intention) and when a window
        # changed an intention or cleared old plans.
        if self.is_current:
            self.load_beside()

    def load_beside(self) -> None:
        self.load_intentions()
        self.load_old_plans()

    # Intentions

    @work(exclusive=True, group="intentions")
    async def load_intentions(self) -> None:
        try:
            answer = await self.link.ask(GetIntentions(ref=""), Intentions)
        except LinkError as error:
            self._intentions_status(f"could not load the intentions: {error}")
            return
        self._show_intentions(answer)

    def _show_intentions(self, answer: Intentions, keep: str | None = None) -> None:
        self.query_one(IntentionTable).show(answer.rows, keep)
        if answer.rows:
            self._intentions_status(INTENTIONS_HINT)
        else:
            self._intentions_status(
                "No intentions: the assistant keeps one when it means to come back to "
                "something at a time (it looks at each heartbeat)."
            )

    def _intentions_status(self, text: str) -> None:
        self.query_one("#intentions-status", Label).update(text)

    @on(IntentionTable.Edit)
    def edit_intention(self, event: IntentionTable.Edit) -> None:
        def edited(answer: Intentions | None) -> None:
            if answer is not None:
                self._show_intentions(answer, event.row.id)
                self.notify(answer.text[:1].upper() + answer.text[1:])

        self.app.push_screen(IntentionEditScreen(self.link, event.row), edited)

    @on(IntentionTable.Settle)
    async def settle_intention(self, event: IntentionTable.Settle) -> None:
        request = SettleIntention(ref="", id=event.row.id, status=event.status)
        try:
            answer = await self.link.ask(request, Intentions)
        except LinkError as error:
            self.notify(f"Not changed: {error}", severity="error")
            return
        self._show_intentions(answer, event.row.id)
        self.notify(answer.text[:1].upper() + answer.text[1:])

    def action_switch_table(self) -> None:
        intentions = self.query_one(IntentionTable)
        if intentions.has_focus:
            self.query_one(MemoryTable).focus()
        else:
            intentions.focus()

    # Plans made before the planner was held to the user's time

    @work(exclusive=True, group="old-plans")
    async def load_old_plans(self) -> None:
        try:
            self.old = await self.link.ask(GetOldPlans(ref=""), OldPlans)
        except LinkError:
            self.old = None  # nothing flagged; the plans table says what is wrong
        ids = frozenset(self.old.ids if self.old else ())
        self.query_one(MemoryTable).flag(ids)
        line = self.query_one("#old-plans", Label)
        line.display = bool(ids)
        if self.old is not None and ids:
            line.update(
                f"{FLAG}{len(ids)} plan{'s' if len(ids) > 1 else ''} made before "
                f"{self.old.before.astimezone():%d %b %Y %H:%M}, when plans could come from "
                "plain facts about people: o clears them (restorable on the memory screen)"
            )
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Clearing old plans is offered only while there are some."""
        if action == "clear_old":
            return bool(self.old and self.old.ids)
        return True

    def action_clear_old(self) -> None:
        if self.old is None or not self.old.ids:
            return
        count = len(self.old.ids)
        question = (
            f"Delete the {count} plan{'s' if count > 1 else ''} the assistant made before "
            f"{self.old.before.astimezone():%d %b %Y %H:%M}? Some may come from plain facts "
            "about people rather than your own plans. They stay restorable on the memory "
            "screen (F2, deleted), and each delete is in the change history."
        )

        def answered(clear: bool | None) -> None:
            if clear:
                self._clear_old()

        self.app.push_screen(ConfirmScreen(question, "Delete them"), answered)

    @work(group="old-plans-clear")
    async def _clear_old(self) -> None:
        self.notify("Clearing the old plans…")
        try:
            done = await self.link.ask(ClearOldPlans(ref=""), PlanDone, PLAN_TIMEOUT_S)
        except LinkError as error:
            self.notify(f"Not cleared: {error}", severity="error")
            return
        self.notify(done.text[:1].upper() + done.text[1:])
        self.load_old_plans()
        self.load(stay=True)

    # The day plan

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
        self.load(stay=True)
