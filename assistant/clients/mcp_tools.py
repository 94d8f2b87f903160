"""What ``brain mcp`` offers other AI tools: the memory's tools and resources, each one request
to the service (through an :class:`Attachment`), its answer turned into compact JSON text a
model reads. The text of memories, messages, facts and tasks is returned as data and never
acted on here."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import MCPServerError, ResourceError, ToolError
from pydantic import Field

from assistant.clients.answers import A, AnswerError
from assistant.clients.attachment import Attachment
from assistant.clients.mcp_rows import (
    as_json,
    change_json,
    evidence_json,
    fact_json,
    memory_json,
    plan_json,
    recall_json,
    reminder_json,
    task_json,
)
from assistant.protocol.common import Wire
from assistant.protocol.graph import EntityDetail, EntityOpen, EntityPage, EntityQuery
from assistant.protocol.memory import (
    MAX_MEMORY_CHARS,
    AddMemory,
    CoreBlocks,
    CoreQuery,
    Kind,
    MemoryDelete,
    MemoryDetail,
    MemoryDone,
    MemoryEdit,
    MemoryOpen,
    MemoryPage,
    MemoryQuery,
    MemoryUndo,
    RecallPage,
    RecallQuery,
)
from assistant.protocol.tasks import (
    MAX_REMINDER_CHARS,
    AddReminder,
    DayPlan,
    Delegate,
    GetDayPlan,
    GetReminders,
    GetTask,
    Reminders,
    TaskAccepted,
)

# What a search or a listing may ask for at once (a model reads every row).
MAX_RESULTS = 50
# A query is a few words or a question; a goal for a sub-agent a paragraph or two.
MAX_QUERY_CHARS = 2_000
MAX_GOAL_CHARS = 8_000

Id = Annotated[str, Field(min_length=1, max_length=200, description="An id as a result gave it.")]
Moment = Annotated[
    str | None,
    Field(
        max_length=64,
        description="An ISO date or time, e.g. 2026-11-01 or 2026-11-01T18:00 (local time "
        "unless it names a zone).",
    ),
]
Limit = Annotated[int, Field(ge=1, le=MAX_RESULTS, description="How many results at most.")]
Query = Annotated[
    str, Field(max_length=MAX_QUERY_CHARS, description="Words or a question to look for.")
]
Importance = Annotated[
    int | None, Field(ge=1, le=10, description="1 (mundane) to 10 (life-changing).")
]
# Who wrote what an MCP client adds: the name the client gave itself.
NAME_CHARS = 64


class BrainTools:
    def __init__(self, service: Attachment) -> None:
        self.service = service

    # Memories

    async def search_memories(
        self,
        query: Query = "",
        kind: Kind | None = None,
        since: Moment = None,
        until: Moment = None,
        pinned: bool | None = None,
        limit: Limit = 10,
    ) -> str:
        """Search the user's long-term memories by words and meaning together, best first
        (the retrieval the assistant itself uses); with no query, the newest first. Filter
        by kind, by when they were kept (since, until) and by pinned."""
        request = MemoryQuery(
            ref="",
            query=query,
            kinds=[kind] if kind else None,
            since=_moment(since, "since"),
            until=_moment(until, "until"),
            pinned=pinned,
            page_size=limit,
        )
        page = await self._ask(request, MemoryPage)
        return as_json({"total": page.total, "memories": [memory_json(r) for r in page.rows]})

    async def get_memory(self, id: Id) -> str:
        """One memory in full: the memories it was drawn from (for a reflection) and its
        change history (each change's id can be undone)."""
        detail = await self._ask(MemoryOpen(ref="", id=id), MemoryDetail)
        return as_json(
            {
                **memory_json(detail.evidence.row),
                "drawn_from": [evidence_json(e) for e in detail.evidence.cites],
                "history": [change_json(c) for c in detail.changes],
            }
        )

    async def add_memory(
        self,
        ctx: Context,
        text: Annotated[
            str,
            Field(min_length=1, max_length=MAX_MEMORY_CHARS, description="What to remember."),
        ],
        kind: Kind = "observation",
        importance: Importance = None,
        pinned: Annotated[bool, Field(description="Kept in view, never forgotten.")] = False,
    ) -> str:
        """Keep a new memory for the user (the assistant sees it from its next turn, and
        the user's memory screen shows it). Without an importance it is rated like any
        memory."""
        request = AddMemory(
            ref="",
            text=text,
            kind=kind,
            importance=importance,
            pinned=pinned,
            source=source_of(ctx),
        )
        return _done(await self._ask(request, MemoryDone))

    async def update_memory(
        self,
        id: Id,
        text: Annotated[str | None, Field(min_length=1, max_length=MAX_MEMORY_CHARS)] = None,
        importance: Importance = None,
        pinned: bool | None = None,
    ) -> str:
        """Change a memory's text, importance or pin (what is left out stays); the change
        is kept in its history and can be undone."""
        request = MemoryEdit(ref="", id=id, text=text, importance=importance, pinned=pinned)
        return _done(await self._ask(request, MemoryDone))

    async def delete_memory(self, id: Id) -> str:
        """Delete a memory: hidden from the assistant and from lists, and restorable with
        undo_memory_change."""
        return _done(await self._ask(MemoryDelete(ref="", id=id), MemoryDone))

    async def undo_memory_change(
        self,
        change_id: Annotated[
            str | None,
            Field(
                max_length=200,
                description="A change's id from get_memory's history; left out, the newest "
                "change to any memory not yet undone, whoever made it.",
            ),
        ] = None,
    ) -> str:
        """Undo a change to a memory (an edit, a delete, an add)."""
        return _done(await self._ask(MemoryUndo(ref="", change_id=change_id), MemoryDone))

    # The conversation and the knowledge graph

    async def recall_search(
        self, query: Query = "", since: Moment = None, until: Moment = None, limit: Limit = 10
    ) -> str:
        """Search the conversation as it was said (every message between the user and the
        assistant, word for word), by words and meaning; with no query, the messages in the
        time range, oldest first."""
        request = RecallQuery(
            ref="",
            query=query,
            since=_moment(since, "since"),
            until=_moment(until, "until"),
            page_size=limit,
        )
        page = await self._ask(request, RecallPage)
        messages = [recall_json(m) for m in page.rows]
        return as_json({"total": page.total, "messages": messages})

    async def graph_facts(
        self,
        entity: Annotated[
            str,
            Field(min_length=1, max_length=200, description="A person, place or thing's name."),
        ],
    ) -> str:
        """What the knowledge graph learnt about a person, place or thing: its facts that
        hold now, and those that held before (with what replaced them)."""
        page = await self._ask(EntityQuery(ref="", query=entity, page_size=10), EntityPage)
        if not page.rows:
            raise ToolError(f"no person, place or thing named {entity.strip()!r} in the graph")
        wanted = entity.strip().casefold()
        named = [r for r in page.rows if wanted in (n.casefold() for n in (r.name, *r.aliases))]
        row = (named or page.rows)[0]
        detail = await self._ask(EntityOpen(ref="", id=row.id), EntityDetail)
        return as_json(
            {
                "entity": row.name,
                "aliases": row.aliases,
                "now": [fact_json(f) for f in detail.facts if f.valid_until is None],
                "before": [fact_json(f) for f in detail.facts if f.valid_until is not None],
                "other_matches": [r.name for r in page.rows if r.id != row.id],
            }
        )

    # Reminders and tasks

    async def list_reminders(self) -> str:
        """The reminders that have not fired yet, soonest first."""
        listed = await self._ask(GetReminders(ref=""), Reminders)
        return as_json({"reminders": [reminder_json(r) for r in listed.rows]})

    async def add_reminder(
        self,
        ctx: Context,
        text: Annotated[
            str,
            Field(min_length=1, max_length=MAX_REMINDER_CHARS, description="What to remind of."),
        ],
        when: Annotated[
            str,
            Field(
                min_length=1,
                max_length=200,
                description="When: 'in 10 minutes', 'tomorrow at 9', '19:00', or an ISO time.",
            ),
        ],
    ) -> str:
        """Remind the user of something at a time: the assistant says it then (and later,
        marked late, if it was not running)."""
        request = AddReminder(ref="", text=text, when=when, source=source_of(ctx))
        listed = await self._ask(request, Reminders)
        return as_json({"done": listed.text, "reminders": [reminder_json(r) for r in listed.rows]})

    async def delegate_task(
        self,
        goal: Annotated[
            str,
            Field(
                min_length=1,
                max_length=MAX_GOAL_CHARS,
                description="The task, complete in itself (a worker with the user's memories "
                "does it alone).",
            ),
        ],
    ) -> str:
        """Hand a longer job to one of the assistant's background sub-agents (research in
        the user's memories, writing a note); follow it with get_task."""
        accepted = await self._ask(Delegate(ref="", goal=goal), TaskAccepted)
        return as_json(task_json(accepted.task))

    async def get_task(self, id: Id) -> str:
        """A background task as it now stands: its status, plan, steps and result."""
        return as_json(task_json((await self._ask(GetTask(ref="", id=id), TaskAccepted)).task))

    # Resources

    async def core_memory(self) -> str:
        """What the assistant always knows about the user and itself (its core memory)."""
        blocks = await self._ask(CoreQuery(ref=""), CoreBlocks, ResourceError)
        return as_json({b.label: {"about": b.description, "text": b.value} for b in blocks.blocks})

    async def day_plan(self) -> str:
        """The plan the assistant keeps of the user's day, in time order."""
        plan = await self._ask(GetDayPlan(ref=""), DayPlan, ResourceError)
        return as_json({"chunks": [plan_json(p) for p in plan.rows]})

    async def _ask(
        self, request: Wire, expected: type[A], failure: type[MCPServerError] = ToolError
    ) -> A:
        try:
            return await self.service.ask(request, expected)
        except AnswerError as error:
            raise failure(str(error)) from None


def source_of(ctx: Context) -> str:
    """``mcp:<the name the client gave itself>`` ("mcp:client" when it gave none)."""
    params = ctx.session.client_params
    name = " ".join(params.client_info.name.split())[:NAME_CHARS] if params is not None else ""
    return f"mcp:{name or 'client'}"


def _done(done: MemoryDone) -> str:
    return as_json({"done": done.text, "memory": memory_json(done.row)})


def _moment(text: str | None, name: str) -> datetime | None:
    """An ISO date or time as the user's: a time without a zone is local time."""
    if text is None or not text.strip():
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ToolError(
            f"{name}: {text.strip()!r} is not an ISO date or time, e.g. 2026-11-01 or "
            "2026-11-01T18:00"
        ) from None
    return moment if moment.tzinfo is not None else moment.astimezone()
