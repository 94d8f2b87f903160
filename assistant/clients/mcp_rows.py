"""What ``brain mcp``'s tools return: the service's rows as compact JSON a model reads (ids,
text, kind, importance, times in the user's own zone, who wrote it), what is empty or false
left out."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from assistant.protocol.graph import FactRow
from assistant.protocol.memory import ChangeRow, Evidence, MemoryRow, RecallRow
from assistant.protocol.tasks import PlanRow, ReminderRow, TaskRow

# A task's step result is cut to this many characters (its whole result is kept in full).
STEP_CHARS = 500


def as_json(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False)


def memory_json(row: MemoryRow) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "id": row.id,
        "text": row.text,
        "kind": row.kind,
        "importance": row.importance,
        "created_at": when(row.created_at),
        "sources": row.sources,
    }
    if row.event_time is not None:
        shown["event_time"] = when(row.event_time)
    if row.pinned:
        shown["pinned"] = True
    if row.deleted:
        shown["deleted"] = True
    if row.score is not None:
        shown["score"] = round(row.score, 3)
    return shown


def evidence_json(evidence: Evidence) -> dict[str, Any]:
    shown = memory_json(evidence.row)
    if evidence.cites:
        shown["drawn_from"] = [evidence_json(e) for e in evidence.cites]
    return shown


def change_json(change: ChangeRow) -> dict[str, Any]:
    return {
        "change_id": change.id,
        "action": change.action,
        "at": when(change.at),
        "before": change.before,
        "after": change.after,
        **({"undone": True} if change.undone else {}),
    }


def fact_json(fact: FactRow) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "fact": f"{fact.subject_name} {fact.relation} {fact.object_name}",
        "since": when(fact.valid_from),
    }
    if fact.valid_until is not None:
        shown["until"] = when(fact.valid_until)
    if fact.replaced_by:
        shown["replaced_by"] = fact.replaced_by
    if fact.hypothesis:
        shown["maybe"] = True
    return shown


def reminder_json(reminder: ReminderRow) -> dict[str, Any]:
    return {
        "id": reminder.id,
        "text": reminder.text,
        "due_at": when(reminder.due_at),
        "source": reminder.source,
    }


def task_json(task: TaskRow) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "id": task.id,
        "goal": task.goal,
        "status": task.status,
        "created_at": when(task.created_at),
        "requested_by": task.requested_by,
        "plan": [{"goal": g.goal, "status": g.status} for g in task.plan],
        "steps": [
            {"tool": s.tool, "result": clip(s.result), **({"failed": True} if s.failed else {})}
            for s in task.steps
        ],
    }
    if task.current_step:
        shown["now"] = task.current_step
    if task.result is not None:
        shown["result"] = task.result
    if task.reason:
        shown["reason"] = task.reason
    if task.waiting_for is not None:
        shown["waiting_for_the_user"] = task.waiting_for.question
    return shown


def recall_json(message: RecallRow) -> dict[str, Any]:
    return {"at": when(message.at), "role": message.role, "text": message.text}


def plan_json(chunk: PlanRow) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "id": chunk.id,
        "start": when(chunk.start),
        "end": when(chunk.end),
        "text": chunk.text,
    }
    if chunk.parent:
        shown["part_of"] = chunk.parent
    if chunk.by_user:
        shown["by_user"] = True
    return shown


def when(moment: datetime) -> str:
    """In the user's own time zone, to the second."""
    return moment.astimezone().isoformat(timespec="seconds")


def clip(text: str) -> str:
    return text if len(text) <= STEP_CHARS else text[: STEP_CHARS - 1] + "…"
