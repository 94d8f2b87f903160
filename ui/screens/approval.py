"""The question a waiting task puts to the user before a call that acts outside the memory
store: what it wants to run, with which arguments. Allow runs that one call; Refuse tells the
task to do without; Later leaves it waiting (the tasks pane, or the next heartbeat, asks
again)."""

from __future__ import annotations

from functools import partial
from typing import ClassVar

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from assistant.protocol.tasks import AnswerApproval, ApprovalRow, TaskAccepted
from ui.link import LinkError, ServiceLink


class ApprovalScreen(ModalScreen[bool | None]):
    """Dismissed with True (allow), False (refuse) or None (later)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Allow"),
        Binding("n", "answer(False)", "Refuse"),
        Binding("escape", "answer(None)", "Later"),
    ]

    # Refusing is the safe default: Enter on the focused button does nothing outside.
    AUTO_FOCUS = "#refuse"

    def __init__(self, approval: ApprovalRow) -> None:
        super().__init__()
        self.approval = approval

    def compose(self) -> ComposeResult:
        approval = self.approval
        with Vertical(id="approval"):
            yield Label(f"Task {approval.task_id} asks for your permission", id="approval-title")
            yield Static(approval.question, id="approval-question")
            yield Label(f"{approval.tool}", id="approval-tool")
            yield Static(approval.arguments, id="approval-arguments", markup=False)
            yield Static(
                "Nothing runs unless you allow it. Text in a memory or a document cannot "
                "answer for you.",
                id="approval-hint",
            )
            with Horizontal(id="approval-buttons"):
                yield Button("Allow (y)", id="allow", variant="warning")
                yield Button("Refuse (n)", id="refuse", variant="primary")
                yield Button("Later (Esc)", id="later")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        answers = {"allow": True, "refuse": False, "later": None}
        self.dismiss(answers.get(event.button.id or "later"))

    def action_answer(self, allow: bool | None) -> None:
        self.dismiss(allow)


class Questions:
    """The questions of waiting tasks on screen: each shown once at a time, wherever the user
    is; the answer goes to the service."""

    def __init__(self, app: App[None], link: ServiceLink) -> None:
        self.app = app
        self.link = link
        self.showing: dict[str, ApprovalScreen] = {}

    def ask(self, approval: ApprovalRow) -> None:
        if approval.id in self.showing:
            return
        screen = ApprovalScreen(approval)
        self.showing[approval.id] = screen
        self.app.push_screen(screen, partial(self._answered, approval))

    def settled(self, approval_id: str) -> None:
        """Answered elsewhere (another window, ``brain tasks``) or withdrawn: close it."""
        screen = self.showing.get(approval_id)
        if screen is not None and self.app.screen is screen:
            screen.dismiss(None)

    async def _answered(self, approval: ApprovalRow, allow: bool | None) -> None:
        self.showing.pop(approval.id, None)
        if allow is None:
            return
        request = AnswerApproval(ref="", id=approval.id, allow=allow)
        try:
            await self.link.ask(request, TaskAccepted)
        except LinkError as error:
            self.app.notify(f"Not answered: {error}", severity="error")
            return
        said = "Allowed" if allow else "Refused"
        self.app.notify(f"{said}: {approval.tool} for task {approval.task_id}.")
