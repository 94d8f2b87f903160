"""A scripted sub-agent model and a way to run one task with it (tests of control flow; the
real local model is in test_tasks_real.py)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assistant.llm.client import LLMCancelled
from assistant.llm.messages import Message
from assistant.settings import McpServerSettings
from assistant.tasks.approvals import Approvals
from assistant.tasks.records import ApprovalRequest, TaskRecord
from assistant.tasks.subagent import Budget, SubAgent
from assistant.tasks.toolbox import Workspace

Reply = (
    dict[str, Any] | Exception | Callable[[list[Message], threading.Event | None], dict[str, Any]]
)
NOW = datetime(2026, 11, 22, 15, 0, tzinfo=UTC)


def step(
    tool: str, plan: Sequence[str] = ("Answer",), progress: str = "not yet", **arguments: Any
) -> dict[str, Any]:
    """A step as the model writes it: the plan is read from the first step of a task, the
    verdict on the sub-goal in hand from every later one."""
    return {
        "plan": [{"goal": goal, "reason": "it serves the task"} for goal in plan],
        "progress": progress,
        "tool": tool,
        "arguments": arguments,
    }


class ScriptedSteps:
    """A sub-agent's model: the n-th request gets the n-th reply (the last repeats)."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[list[Message]] = []
        self.schemas: list[dict[str, Any]] = []

    def complete_json(
        self,
        messages: Sequence[Message],
        schema: dict[str, Any],
        *,
        max_tokens: int | None = None,
        temperature: float | None = 0.0,
        cancel: threading.Event | None = None,
    ) -> dict[str, Any]:
        self.requests.append(list(messages))
        self.schemas.append(schema)
        reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            return reply(list(messages), cancel)
        return reply


def until_cancelled(messages: list[Message], cancel: threading.Event | None) -> dict[str, Any]:
    """A request that takes as long as it is let to (the client's cancellable stream)."""
    assert cancel is not None
    cancel.wait(60)
    raise LLMCancelled("cancelled")


def run_task(
    workspace: Workspace,
    llm: ScriptedSteps,
    budget: Budget | None = None,
    goal: str = "Find Aya's city",
) -> tuple[TaskRecord, list[TaskRecord]]:
    saved: list[TaskRecord] = []
    record = TaskRecord(id="t-abc123", goal=goal, status="running", started_at=NOW)
    done = SubAgent(
        record,
        llm,
        workspace,
        lambda r: saved.append(r.model_copy(deep=True)),
        budget or Budget(),
        sleep=lambda s: None,
    ).run()
    return done, saved


class Answering(Approvals):
    """The user, answering every question the same way after ``delay`` seconds."""

    def __init__(self, allow: bool, delay: float = 0.0) -> None:
        super().__init__(self._asked)
        self.allow = allow
        self.delay = delay
        self.asked: list[ApprovalRequest] = []

    def _asked(self, task_id: str, request: ApprovalRequest) -> None:
        self.asked.append(request)

        def answer() -> None:
            time.sleep(self.delay)
            self.answer(request.id, self.allow)

        threading.Thread(target=answer, daemon=True).start()


# A small MCP server over stdio that writes files into the folder it is given.
MCP_SERVER = Path(__file__).parent / "helpers" / "mcp_server.py"


def files_server(sandbox: Path) -> McpServerSettings:
    """The test MCP server as configured: its tools are files__write_file, files__add, …"""
    return McpServerSettings(
        name="files", command=sys.executable, args=[str(MCP_SERVER), str(sandbox)]
    )
