"""One entity of the knowledge graph: its facts (current ones first, then the past ones with
when they stopped holding and what replaced them), the memories (and pieces of documents)
behind the chosen fact, and the user's corrections with undo.

``e`` corrects the chosen fact (subject, relation, object; Ctrl+S saves, Escape cancels), ``r``
retires a current fact or reinstates a past one, ``o`` opens the fact's other entity, Enter on a
memory opens it, Ctrl+Z undoes the chosen change (or the newest one).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input, Label

from assistant.protocol.graph import (
    EntityDetail,
    EntityOpen,
    FactChange,
    FactDone,
    FactRow,
    FactUndo,
)
from assistant.protocol.memory import ChangeRow, MemoryChangedByUser
from ui.link import LinkError, ServiceLink
from ui.screens.memory_detail import MemoryDetailScreen, change_cells
from ui.widgets.memory_table import when

MEMORY_CHARS = 100
# Row keys of document pieces in the memories table (a memory row opens the memory).
PASSAGE = "passage:"


class EntityScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back"),
        Binding("e", "correct", "Correct"),
        Binding("r", "retire", "Retire/reinstate"),
        Binding("o", "other", "Other entity"),
        Binding("ctrl+s", "save", "Save", priority=True),
        Binding("ctrl+z", "undo", "Undo change"),
    ]

    def __init__(self, link: ServiceLink, entity_id: str) -> None:
        super().__init__()
        self.link = link
        self.entity_id = entity_id
        self.facts: list[FactRow] = []
        self.changes: list[ChangeRow] = []

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="entity"):
            yield Label("loading…", id="entity-meta")
            yield Label("Facts", classes="detail-heading")
            yield DataTable[Text](id="entity-facts", cursor_type="row")
            with Horizontal(id="fact-edit"):
                yield Input(placeholder="subject", id="fact-subject", compact=True)
                yield Input(placeholder="relation", id="fact-relation", compact=True)
                yield Input(placeholder="object", id="fact-object", compact=True)
            yield Label("Learnt from (Enter opens a memory)", classes="detail-heading")
            yield DataTable[Text](id="fact-memories", cursor_type="row")
            yield Label(
                "Your changes (Ctrl+Z here undoes the chosen one)", classes="detail-heading"
            )
            yield DataTable[str](id="entity-history", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "Entity"
        facts = self.query_one("#entity-facts", DataTable)
        facts.add_column("Fact", key="fact", width=46)
        facts.add_column("Holds", key="holds", width=60)
        facts.add_column("Memories", key="memories", width=8)
        self.query_one("#fact-memories", DataTable).add_columns("When", "Memory")
        self.query_one("#entity-history", DataTable).add_columns(
            "When", "Change", "Before", "After", ""
        )
        self.query_one("#fact-edit").display = False
        self.link.memory_changed.subscribe(self, self._changed_elsewhere)
        facts.focus()
        self.load()

    @work(exclusive=True, group="entity-detail")
    async def load(self) -> None:
        try:
            detail = await self.link.ask(EntityOpen(ref="", id=self.entity_id), EntityDetail)
        except LinkError as error:
            self.query_one("#entity-meta", Label).update(f"could not open the entity: {error}")
            return
        self._show(detail)

    def _show(self, detail: EntityDetail) -> None:
        entity = detail.entity
        self.sub_title = entity.name
        aliases = f" · also called {', '.join(entity.aliases)}" if entity.aliases else ""
        self.query_one("#entity-meta", Label).update(
            Text(f"{entity.name}{aliases} · {entity.current} facts hold, {entity.past} past")
        )
        table = self.query_one("#entity-facts", DataTable)
        chosen = self.fact
        table.clear()
        self.facts = detail.facts
        for fact in detail.facts:
            table.add_row(*fact_cells(fact), key=fact.id)
        if chosen is not None:
            place = next((i for i, f in enumerate(self.facts) if f.id == chosen.id), 0)
            table.move_cursor(row=place)
        self.changes = detail.changes
        history = self.query_one("#entity-history", DataTable)
        history.clear()
        for change in detail.changes:
            history.add_row(*change_cells(readable(change)), key=change.id)
        self._show_memories()

    @property
    def fact(self) -> FactRow | None:
        row = self.query_one("#entity-facts", DataTable).cursor_row
        return self.facts[row] if 0 <= row < len(self.facts) else None

    @on(DataTable.RowHighlighted, "#entity-facts")
    def _show_memories(self) -> None:
        memories = self.query_one("#fact-memories", DataTable)
        memories.clear()
        fact = self.fact
        if fact is None:
            return
        for row in fact.memories:
            memories.add_row(Text(when(row.created_at)), Text(_clipped(row.text)), key=row.id)
        for passage in fact.passages:
            title = passage.title or "a document"
            shown = Text(f"{title}: ", style="italic").append(_clipped(passage.text))
            memories.add_row(Text(when(passage.created_at)), shown, key=PASSAGE + passage.id)

    @on(DataTable.RowSelected, "#fact-memories")
    def memory_chosen(self, event: DataTable.RowSelected) -> None:
        chosen = event.row_key.value
        if chosen and not chosen.startswith(PASSAGE):
            self.app.push_screen(MemoryDetailScreen(self.link, chosen))

    def _changed_elsewhere(self, change: MemoryChangedByUser) -> None:
        self.load()

    # Actions

    def action_close(self) -> None:
        editing = self.query_one("#fact-edit")
        if editing.display:
            editing.display = False
            self.query_one("#entity-facts", DataTable).focus()
            return
        self.dismiss(None)

    def action_correct(self) -> None:
        fact = self.fact
        if fact is None:
            return
        self.query_one("#fact-subject", Input).value = fact.subject_name
        self.query_one("#fact-relation", Input).value = fact.relation
        self.query_one("#fact-object", Input).value = fact.object_name
        self.query_one("#fact-edit").display = True
        self.query_one("#fact-object", Input).focus()
        self.notify("Correct the fact, then Ctrl+S saves it (Escape cancels).")

    async def action_save(self) -> None:
        fact = self.fact
        if fact is None or not self.query_one("#fact-edit").display:
            return
        typed = {
            "subject": self.query_one("#fact-subject", Input).value,
            "relation": self.query_one("#fact-relation", Input).value,
            "object": self.query_one("#fact-object", Input).value,
        }
        was = {"subject": fact.subject_name, "relation": fact.relation, "object": fact.object_name}
        changed = {k: v for k, v in typed.items() if " ".join(v.split()) != was[k]}
        if not changed:
            self.notify("Nothing changed.")
            return
        if await self._change(FactChange(ref="", id=fact.id, action="correct", **changed)):
            self.query_one("#fact-edit").display = False
            self.query_one("#entity-facts", DataTable).focus()

    async def action_retire(self) -> None:
        fact = self.fact
        if fact is not None:
            action = "retire" if fact.valid_until is None else "reinstate"
            await self._change(FactChange(ref="", id=fact.id, action=action))

    def action_other(self) -> None:
        fact = self.fact
        if fact is not None:
            other = fact.object if fact.subject == self.entity_id else fact.subject
            self.app.push_screen(EntityScreen(self.link, other))

    async def action_undo(self) -> None:
        row = self.query_one("#entity-history", DataTable).cursor_row
        chosen = self.changes[row] if 0 <= row < len(self.changes) else None
        if chosen is None or chosen.undone or chosen.action == "undo":
            chosen = next((c for c in self.changes if not c.undone and c.action != "undo"), None)
        if chosen is None:
            self.notify("No change of yours to undo here.")
            return
        await self._change(FactUndo(ref="", change_id=chosen.id))

    async def _change(self, request: FactChange | FactUndo) -> bool:
        try:
            done = await self.link.ask(request, FactDone)
        except LinkError as error:
            # What was typed stays in the boxes, so nothing is lost.
            self.notify(f"Not changed: {error}", severity="error")
            return False
        self.notify(done.text[:1].upper() + done.text[1:])
        self.load()
        return True


# Ids a change records for undo, which mean nothing on screen (the names beside them do).
HIDDEN_FIELDS = ("subject", "object", "replaced_by")


def readable(change: ChangeRow) -> ChangeRow:
    """The change without the entity and fact ids it records."""

    def shown(values: dict[str, object]) -> dict[str, object]:
        return {k: v for k, v in values.items() if k not in HIDDEN_FIELDS}

    return change.model_copy(update={"before": shown(change.before), "after": shown(change.after)})


def fact_cells(fact: FactRow) -> tuple[Text, Text, Text]:
    maybe = " (maybe)" if fact.hypothesis else ""
    text = Text(f"{fact.subject_name} {fact.relation} {fact.object_name}{maybe}")
    if fact.valid_until is None:
        holds = Text(f"since {when(fact.valid_from)}")
    else:
        text.stylize("dim")
        ended = f"{when(fact.valid_from)} to {when(fact.valid_until)}"
        why = f", replaced by “{fact.replaced_by}”" if fact.replaced_by else ", retired"
        holds = Text(f"{ended}{why}", style="dim")
    return text, holds, Text(str(len(fact.memories) + len(fact.passages)))


def _clipped(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MEMORY_CHARS else text[: MEMORY_CHARS - 1] + "…"
