"""What a sub-agent may do: the allow-list of tools and what they work on.

Memory and archival search and insert, notes and reminders act on the memory store and run at
once. Reading the user's files is limited to the paths the user opened (``tasks.allowed_paths``).
The tools of MCP servers act outside the memory store: each call is put to the user first
(``Tool.confirm``; see :mod:`assistant.tasks.approvals`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pydantic import Field

from assistant.agent.tools import Arguments, Search, Stores, Tool, by_name
from assistant.settings import McpServerSettings
from assistant.tasks.approvals import Approvals
from assistant.tasks.reminders import ReminderStore, reminder_time
from memory.documents import DocumentError, allowed_path, documents_at, read_document
from memory.records import MemoryRecord

PAGE_SIZE = 5
ENDING = ("finish", "give_up")


class Finish(Arguments):
    result: str = Field(description="What the user should know: the answer or what was done.")


class GiveUp(Arguments):
    reason: str = Field(description="Why the task cannot be done.")


class Text(Arguments):
    text: str = Field(description="What to keep.")


# Short fields are capped (the local server's grammar spells a cap out character by character,
# so long texts are bounded by the reply's token limit instead): a small model that starts
# repeating itself inside a query otherwise fills the whole reply.
class Note(Arguments):
    title: str = Field(description="A few words naming the note.", max_length=80)
    text: str = Field(description="The note itself.")


class SetReminder(Arguments):
    text: str = Field(description="What to remind the user of.")
    when: str = Field(description="When: 'in 10 minutes', 'tomorrow at 9', an ISO time.")


class Query(Arguments):
    query: str = Field(description="What to look for.", max_length=120)


class Ingest(Arguments):
    path: str = Field(description="A file or folder the user allowed (text, Markdown, PDF).")


@dataclass(frozen=True)
class Workspace:
    """What a sub-agent's tools work on and may reach."""

    stores: Stores
    reminders: ReminderStore
    clock: Callable[[], datetime]
    approvals: Approvals = field(default_factory=Approvals)
    allowed_paths: Sequence[Path] = ()
    mcp_servers: Sequence[McpServerSettings] = ()
    mcp_timeout_s: float = 60.0
    # Where MCP servers' own error output is kept.
    log_dir: Path | None = None


def task_tools(
    task_id: str,
    workspace: Workspace,
    found: Callable[[Iterable[MemoryRecord]], None] = lambda records: None,
) -> tuple[Tool, ...]:
    """The built-in allow-list (an MCP server's tools are added when the task starts);
    ``found`` hears of the memories its searches return."""
    source = f"subagent:{task_id}"
    stream = workspace.stores.stream

    def memory_search(_: Stores, arguments: Query) -> str:
        hits = stream.retrieve(arguments.query, k=PAGE_SIZE)
        found(hit.record for hit in hits)
        # No ids: no tool of a sub-agent takes one, and a small model reads them as text.
        return "\n".join(f"- {m.record.text}" for m in hits) or "nothing found"

    def memory_insert(_: Stores, arguments: Text) -> str:
        return f"stored as memory {stream.add(arguments.text, source=source).id}"

    def archival_search(_: Stores, arguments: Search) -> str:
        found = workspace.stores.archival.search(arguments.query, arguments.page, PAGE_SIZE)
        lines = [f"- {hit.text}" for hit in found.items]
        return "\n".join([found.describe(), *lines])

    def write_note(_: Stores, arguments: Note) -> str:
        text = f"Note: {arguments.title.strip()}\n{arguments.text.strip()}"
        record = stream.add(text, kind="summary", source=source)
        return f"note saved as memory {record.id}"

    def set_reminder(_: Stores, arguments: SetReminder) -> str:
        due = reminder_time(arguments.when, workspace.clock())
        reminder = workspace.reminders.add(arguments.text, due, source=source)
        return f"reminder {reminder.id} set for {due.isoformat(timespec='seconds')}"

    def ingest(_: Stores, arguments: Ingest) -> str:
        return ingest_documents(arguments.path, workspace)

    return (
        Tool("memory_search", "Search the user's memories, best first.", Query, memory_search),
        Tool("memory_insert", "Keep something you learnt as a memory.", Text, memory_insert),
        Tool("archival_search", "Search archival storage (documents).", Search, archival_search),
        by_name()["graph_search"],
        Tool("write_note", "Save a note for the user in their memory.", Note, write_note),
        Tool("set_reminder", "Remind the user of something at a time.", SetReminder, set_reminder),
        Tool(
            "ingest_documents",
            "Read a file or folder the user allowed into archival storage, to search it.",
            Ingest,
            ingest,
        ),
        Tool("finish", "The goal is reached: end the task with its result.", Finish, _ending),
        Tool("give_up", "The goal cannot be reached: end the task, saying why.", GiveUp, _ending),
    )


def ingest_documents(path: str, workspace: Workspace) -> str:
    """Read the documents at ``path`` (inside the allowed paths) into archival storage, one
    archival document per file titled with its path (a file read again replaces its copy)."""
    paths = documents_at(allowed_path(path, workspace.allowed_paths))
    archival = workspace.stores.archival
    stored, chunks, problems = 0, 0, []
    for document_path in paths:
        try:
            document = read_document(document_path)
        except DocumentError as error:
            problems.append(str(error))
            continue
        if document.warning:
            problems.append(document.warning)
        chunks += len(archival.replace_document(str(document_path), document.text, "import"))
        stored += 1
    if not stored:
        raise DocumentError("nothing could be read: " + "; ".join(problems[:3]))
    summary = (
        f"read {stored} document{'s' if stored != 1 else ''} into archival storage "
        f"({chunks} chunks); search them with archival_search"
    )
    return "; ".join([summary, *problems[:3]])


def _ending(_: Stores, arguments: Arguments) -> str:
    return "ended"
