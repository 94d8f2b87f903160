"""Core memory: the blocks (persona, human) the agent sees in every prompt, edited here."""

from __future__ import annotations

from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Label, TextArea

from assistant.protocol.memory import CoreBlock, CoreBlocks, CoreEdit, CoreQuery
from ui.link import LinkError, ServiceLink


class CoreMemoryScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("ctrl+s", "save", "Save", priority=True),
    ]

    def __init__(self, link: ServiceLink) -> None:
        super().__init__()
        self.link = link
        self.blocks: dict[str, CoreBlock] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield VerticalScroll(Label("loading…", id="core-status"), id="core-blocks")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "Core memory"
        self.sub_title = "Shown to the agent in every prompt · Ctrl+S saves"
        self.load()

    @work(exclusive=True, group="core")
    async def load(self) -> None:
        try:
            answer = await self.link.ask(CoreQuery(ref=""), CoreBlocks)
        except LinkError as error:
            self.query_one("#core-status", Label).update(f"could not load core memory: {error}")
            return
        await self._show(answer.blocks)

    async def _show(self, blocks: list[CoreBlock]) -> None:
        self.blocks = {block.label: block for block in blocks}
        container = self.query_one("#core-blocks", VerticalScroll)
        await container.remove_children()
        widgets: list[Label | TextArea] = []
        for block in blocks:
            widgets.append(Label(heading(block, block.value), id=f"core-heading-{block.label}"))
            widgets.append(TextArea(block.value, id=f"core-{block.label}", soft_wrap=True))
        await container.mount_all(widgets)
        if widgets:
            widgets[1].focus()

    @on(TextArea.Changed)
    def typed(self, event: TextArea.Changed) -> None:
        label = (event.text_area.id or "").removeprefix("core-")
        block = self.blocks.get(label)
        if block is not None:
            heading_label = self.query_one(f"#core-heading-{label}", Label)
            heading_label.update(heading(block, event.text_area.text))
            heading_label.set_class(len(event.text_area.text.strip()) > block.limit, "error")

    async def action_save(self) -> None:
        changed = [
            (label, area.text)
            for label, block in self.blocks.items()
            if (area := self.query_one(f"#core-{label}", TextArea)).text.strip() != block.value
        ]
        if not changed:
            self.notify("Nothing changed.")
            return
        for label, value in changed:
            try:
                answer = await self.link.ask(CoreEdit(ref="", label=label, value=value), CoreBlocks)
            except LinkError as error:
                self.notify(f"{label} not saved: {error}", severity="error")
                return
            self.blocks = {block.label: block for block in answer.blocks}
            self.notify(f"Saved {label}; the agent sees it from its next turn.")


def heading(block: CoreBlock, text: str) -> str:
    return f"{block.label} — {block.description} ({len(text.strip())}/{block.limit} characters)"
