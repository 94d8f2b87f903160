"""Task records as the protocol's rows: for the task desk, and for `brain tasks` reading the
records on disk while no service runs (so this imports nothing of the memory store)."""

from __future__ import annotations

import json

from assistant.protocol.tasks import ApprovalRow, StepRow, SubGoalRow, TaskRow
from assistant.tasks.records import ApprovalRequest, TaskRecord


def approval_row(task_id: str, request: ApprovalRequest) -> ApprovalRow:
    return ApprovalRow(
        id=request.id,
        task_id=task_id,
        tool=request.tool,
        arguments=json.dumps(request.arguments, ensure_ascii=False),
        question=request.question,
        asked_at=request.asked_at,
    )


def task_row(record: TaskRecord) -> TaskRow:
    return TaskRow(
        id=record.id,
        goal=record.goal,
        status=record.status,
        created_at=record.created_at,
        requested_by=record.requested_by,
        current_step=record.current_step,
        plan=[SubGoalRow(goal=g.goal, reason=g.reason, status=g.status) for g in record.plan],
        steps=[
            StepRow(number=s.number, tool=s.tool, result=s.result, failed=s.failed)
            for s in record.steps
        ],
        result=record.result,
        reason=record.reason,
        resumable=record.resumable,
        elapsed_s=round(record.elapsed_s(), 1),
        llm_calls=record.cost.llm_calls,
        tokens=record.cost.tokens,
        waiting_for=(
            approval_row(record.id, record.waiting_for) if record.waiting_for is not None else None
        ),
    )
