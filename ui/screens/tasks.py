"""The tasks pane: delegated tasks (status, current step, elapsed time, their plan and steps,
the result of a finished one) and the service's own work (the reply being written, turns
waiting, memories to rate), refreshed every second. A goal typed at the bottom is delegated
to a sub-agent; Ctrl+X cancels the selected task, Ctrl+R runs an interrupted one again, Ctrl+Y
answers the question of one that waits for the user's permission."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input, Label, Static

from assistant.protocol.conversation import Cancel
from assistant.protocol.tasks import (
    CancelTask,
    Delegate,
    GetTasks,
    ResumeTask,
    TaskAccepted,
    TaskRow,
    Tasks,
)
from ui.link import LinkError, ServiceLink
from ui.screens.approval import Questions

REFRESH_S = 1.0
STEPS_SHOWN = 8
MARKS = {"todo": "○", "doing": "◐", "done": "●", "dropped": "✕"}


class TasksScreen(Screen[None]):
    # Typing on opening the pane writes a goal to delegate (Tab reaches the tasks table).
    AUTO_FOCUS = "#task-goal"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        # Priority: the goal box has the focus, and an Input takes Ctrl+X (cut) and Ctrl+K.
        Binding("ctrl+x", "cancel_task", "Cancel task", priority=True),
        Binding("ctrl+r", "resume_task", "Run again"),
        Binding("ctrl+y", "answer", "Answer its question"),
        Binding("ctrl+k", "stop_reply", "Stop the reply", priority=True),
    ]

    def __init__(self, link: ServiceLink, questions: Questions) -> None:
        super().__init__()
        self.link = link
        self.questions = questions
        self.latest: Tasks | None = None
        self.selected: str | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable[str](id="tasks-table", cursor_type="row")
        with VerticalScroll(id="task-detail-box"):
            yield Static("", id="task-detail")
        yield DataTable[str](id="work-table", cursor_type="none")
        yield Input(placeholder="Delegate a task: type its goal and press Enter", id="task-goal")
        yield Label("asking the service…", id="tasks-status")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "Tasks"
        self.sub_title = "Delegated tasks go on when this window closes"
        tasks = self.query_one("#tasks-table", DataTable)
        tasks.add_columns("Task", "Status", "Elapsed", "Calls", "Goal")
        self.query_one("#work-table", DataTable).add_columns("Service", "What", "Elapsed")
        self.link.tasks.subscribe(self, self._show)
        self.set_interval(REFRESH_S, self.ask)
        self.call_later(self.ask)

    async def ask(self) -> None:
        try:
            await self.link.send(GetTasks())
        except LinkError as error:
            self.query_one("#tasks-status", Label).update(f"not connected: {error}")

    def _show(self, tasks: Tasks) -> None:
        self.latest = tasks
        table = self.query_one("#tasks-table", DataTable)
        table.clear()
        for row in tasks.tasks:
            table.add_row(
                row.id,
                row.status,
                f"{row.elapsed_s:.0f} s" if row.elapsed_s else "",
                str(row.llm_calls),
                row.goal,
                key=row.id,
            )
        ids = [row.id for row in tasks.tasks]
        if self.selected in ids:
            table.move_cursor(row=ids.index(self.selected))
        elif ids:
            self.selected = ids[0]
        self._detail()
        work = self.query_one("#work-table", DataTable)
        work.clear()
        for item in tasks.work:
            work.add_row(
                item.kind, item.description, f"{item.seconds:.0f} s" if item.seconds else ""
            )
        running = sum(row.status in ("queued", "running", "waiting") for row in tasks.tasks)
        self.query_one("#tasks-status", Label).update(
            f"{len(tasks.tasks)} task{'s' if len(tasks.tasks) != 1 else ''}, {running} under way"
            if tasks.tasks
            else "no delegated tasks yet: type a goal below, or ask the assistant to do "
            "something in the background"
        )

    @on(DataTable.RowHighlighted, "#tasks-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key.value is not None:
            self.selected = event.row_key.value
            self._detail()

    def _row(self) -> TaskRow | None:
        if self.latest is None:
            return None
        return next((row for row in self.latest.tasks if row.id == self.selected), None)

    def _detail(self) -> None:
        self.query_one("#task-detail", Static).update(describe(self._row()))

    @on(Input.Submitted, "#task-goal")
    async def _delegate(self, event: Input.Submitted) -> None:
        goal = event.value.strip()
        if not goal:
            return
        try:
            accepted = await self.link.ask(Delegate(ref="", goal=goal), TaskAccepted)
        except LinkError as error:
            self.notify(f"Not started: {error}", severity="error")
            return
        event.input.value = ""
        self.selected = accepted.task.id
        self.notify(f"Task {accepted.task.id} started.")
        await self.ask()

    async def action_cancel_task(self) -> None:
        row = self._row()
        if row is None or row.status not in ("queued", "running", "waiting"):
            self.notify("Select a task that is under way.")
            return
        try:
            await self.link.ask(CancelTask(ref="", id=row.id), TaskAccepted)
        except LinkError as error:
            self.notify(f"Not cancelled: {error}", severity="error")
            return
        self.notify(f"Cancelling task {row.id}.")
        await self.ask()

    def action_answer(self) -> None:
        row = self._row()
        if row is None or row.waiting_for is None:
            self.notify("Select a task that waits for your permission.")
            return
        self.questions.ask(row.waiting_for)

    async def action_resume_task(self) -> None:
        row = self._row()
        if row is None or not row.resumable:
            self.notify("Select a task a restart interrupted.")
            return
        try:
            accepted = await self.link.ask(ResumeTask(ref="", id=row.id), TaskAccepted)
        except LinkError as error:
            self.notify(f"Not started: {error}", severity="error")
            return
        self.selected = accepted.task.id
        await self.ask()

    async def action_stop_reply(self) -> None:
        if self.latest is None or not any(w.kind == "reply" for w in self.latest.work):
            self.notify("No reply is being written.")
            return
        try:
            await self.link.send(Cancel())
        except LinkError as error:
            self.notify(f"Not stopped: {error}", severity="error")


def describe(row: TaskRow | None) -> Text:
    """The selected task in full: goal, plan, latest steps, outcome and cost."""
    if row is None:
        return Text("Select a task to see its plan and steps.", style="dim")
    text = Text()
    text.append(f"{row.goal}\n", style="bold")
    text.append(f"{row.status}", style="bold")
    if row.current_step:
        text.append(f" · {row.current_step}")
    text.append(f" · {row.elapsed_s:.0f} s · {row.llm_calls} LLM calls · ~{row.tokens:,} tokens\n")
    if row.waiting_for is not None:
        text.append("Asks: ", style="bold yellow")
        text.append(f"{row.waiting_for.question} (Ctrl+Y to answer)\n", style="yellow")
    if row.result:
        text.append("Result: ", style="bold")
        text.append(f"{row.result}\n")
    if row.reason:
        text.append(
            f"{row.reason}{' (Ctrl+R runs it again)' if row.resumable else ''}\n", style="italic"
        )
    if row.plan:
        text.append("Plan\n", style="bold")
        for goal in row.plan:
            text.append(f" {MARKS[goal.status]} {goal.goal}")
            text.append(f" — {goal.reason}\n", style="dim")
    if row.steps:
        text.append("Steps\n", style="bold")
        for step in row.steps[-STEPS_SHOWN:]:
            result = " ".join(step.result.split())
            result = result if len(result) <= 160 else result[:159] + "…"
            style = "red" if step.failed else ""
            text.append(f" {step.number}. {step.tool}: ", style="bold")
            text.append(f"{result}\n", style=style)
    return text
