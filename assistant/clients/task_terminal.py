"""``brain tasks`` (what the service is doing and every delegated task, also when it is not
running: the records are on disk) and ``brain ask --delegate`` (start a task and follow it
until it ends)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import sys
import uuid
from typing import TextIO

from assistant.clients.connection import ServiceClient, ServiceError, ServiceNotRunning
from assistant.clients.terminal import EXIT_FAILURE, attach, tell
from assistant.config import LoadedConfig
from assistant.protocol.common import Failed
from assistant.protocol.tasks import (
    AnswerApproval,
    CancelTask,
    Delegate,
    GetTasks,
    TaskAccepted,
    TaskRow,
    Tasks,
    Tick,
)
from assistant.service.desks.task_rows import task_row
from assistant.tasks.store import TaskStore

FOLLOW_POLL_S = 1.0
RESULT_CHARS = 300


async def tasks(
    loaded: LoadedConfig, as_json: bool, out: TextIO = sys.stdout, err: TextIO = sys.stderr
) -> int:
    """What the service is doing and the delegated tasks; does not start it."""
    try:
        client = await ServiceClient.connect(loaded, "tasks", start=False)
    except ServiceNotRunning:
        folder = loaded.settings.data_dir / "tasks"
        rows = [task_row(r) for r in TaskStore.read(folder)] if folder.is_dir() else []
        if as_json:
            payload = {
                "running": False,
                "work": [],
                "tasks": [r.model_dump(mode="json") for r in rows],
            }
            out.write(json.dumps(payload) + "\n")
            return 0
        out.write("The Brain OS service is not running: nothing is in progress.\n")
        _write_tasks(rows, out)
        return 0
    except ServiceError as error:
        tell(err, str(error))
        return EXIT_FAILURE
    listed: Tasks | None = None
    try:
        listed = await _ask_tasks(client)
    except ServiceError as error:
        tell(err, str(error))
    await client.leave()
    if listed is None:
        return EXIT_FAILURE
    welcome = client.welcome
    if as_json:
        payload = {
            "running": True,
            "pid": welcome.pid,
            "state": welcome.state,
            "endpoint": welcome.endpoint,
            "work": [item.model_dump() for item in listed.work],
            "tasks": [row.model_dump(mode="json") for row in listed.tasks],
        }
        out.write(json.dumps(payload) + "\n")
        return 0
    out.write(f"service pid {welcome.pid}: {welcome.text}\n")
    if not listed.work:
        out.write("nothing in progress\n")
    for item in listed.work:
        elapsed = f"{item.seconds:6.1f} s" if item.seconds else " " * 8
        out.write(f"{item.kind:<8} {elapsed}  {item.description}\n")
    _write_tasks(listed.tasks, out)
    return 0


def _write_tasks(rows: list[TaskRow], out: TextIO) -> None:
    if not rows:
        out.write("no delegated tasks\n")
        return
    out.write("delegated tasks, newest first:\n")
    for row in rows:
        where = row.current_step if row.status in ("running", "waiting") else ""
        out.write(
            f"{row.id}  {row.status:<9} {row.elapsed_s:6.0f} s  {len(row.steps):2d} steps  "
            f"{row.llm_calls:2d} calls  {row.goal}\n"
        )
        outcome = row.result if row.status == "done" else row.reason
        if where or outcome:
            out.write(f"    {_clip(where or outcome or '')}\n")
        if row.waiting_for is not None:
            out.write(f"    {_asking(row)}\n")


def _asking(row: TaskRow) -> str:
    assert row.waiting_for is not None
    return (
        f"asks: {_clip(row.waiting_for.question)} (brain tasks --allow {row.id} / --deny {row.id})"
    )


async def _ask_tasks(client: ServiceClient) -> Tasks | None:
    await client.send(GetTasks())
    async for update in client.updates():
        if isinstance(update, Tasks):
            return update
    return None


async def cancel(
    loaded: LoadedConfig, task_id: str, out: TextIO = sys.stdout, err: TextIO = sys.stderr
) -> int:
    request = CancelTask(ref=uuid.uuid4().hex, id=task_id)
    return await _task_request(loaded, request, f"task {task_id}: cancelling", out, err)


async def answer_approval(
    loaded: LoadedConfig,
    approval_id: str,
    allow: bool,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Allow or refuse the call a waiting task asked about (its question's id or the task's)."""
    request = AnswerApproval(ref=uuid.uuid4().hex, id=approval_id, allow=allow)
    done = f"{approval_id}: {'allowed' if allow else 'refused'}"
    return await _task_request(loaded, request, done, out, err)


async def tick(loaded: LoadedConfig, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Make the running service's heartbeat tick now (reminders, plans, the agent's look)."""
    try:
        client = await ServiceClient.connect(loaded, "tasks", start=False)
    except ServiceNotRunning:
        tell(err, "the service is not running: there is no heartbeat to tick")
        return EXIT_FAILURE
    except ServiceError as error:
        tell(err, str(error))
        return EXIT_FAILURE
    await client.send(Tick())
    await client.leave()
    out.write("heartbeat: ticking now\n")
    return 0


async def _task_request(
    loaded: LoadedConfig,
    request: CancelTask | AnswerApproval,
    done: str,
    out: TextIO,
    err: TextIO,
) -> int:
    try:
        client = await ServiceClient.connect(loaded, "tasks", start=False)
    except ServiceNotRunning:
        tell(err, "the service is not running, so no task is running")
        return EXIT_FAILURE
    except ServiceError as error:
        tell(err, str(error))
        return EXIT_FAILURE
    code = EXIT_FAILURE
    try:
        await client.send(request)
        answer = await _answer(client, request.ref)
        if isinstance(answer, TaskAccepted):
            out.write(done + "\n")
            code = 0
        elif answer is not None:
            tell(err, answer.text)
    except ServiceError as error:
        tell(err, str(error))
    await client.leave()
    return code


async def _answer(client: ServiceClient, ref: str) -> TaskAccepted | Failed | None:
    async for update in client.updates():
        if isinstance(update, TaskAccepted | Failed) and update.ref == ref:
            return update
    return None


async def delegate(
    loaded: LoadedConfig, goal: str, out: TextIO = sys.stdout, err: TextIO = sys.stderr
) -> int:
    """Start a task and follow it: its steps as they happen, then its result. Ctrl+C stops
    following (the task goes on in the service)."""
    if not goal.strip():
        tell(err, "nothing to delegate")
        return EXIT_FAILURE
    client = await attach(loaded, "ask", err)
    if client is None:
        return EXIT_FAILURE
    ref = uuid.uuid4().hex
    try:
        await client.send(Delegate(ref=ref, goal=goal))
        answer = await _answer(client, ref)
        if not isinstance(answer, TaskAccepted):
            tell(err, answer.text if answer is not None else "the service did not answer")
            await client.leave()
            return EXIT_FAILURE
        out.write(f"task {answer.task.id} started: {answer.task.goal}\n")
        out.flush()
        final = await _follow(client, answer.task.id, out, err)
    except ServiceError as error:
        tell(err, str(error))
        final = None
    left = await client.leave()
    if final is None:
        if left is not None and left.stays:
            tell(err, f"the task goes on in the background ({left.reason}); `brain tasks` shows it")
        return EXIT_FAILURE
    if final.status == "done":
        out.write(f"{final.result}\n")
        return 0
    tell(err, f"task {final.id} {final.status}: {final.reason}")
    return EXIT_FAILURE


async def _follow(client: ServiceClient, task_id: str, out: TextIO, err: TextIO) -> TaskRow | None:
    """The task once it ended; None if following stopped first (Ctrl+C)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, stop.set)
    shown = ""
    try:
        while not stop.is_set():
            listed = await _ask_tasks(client)
            row = next((t for t in listed.tasks if t.id == task_id), None) if listed else None
            if row is None:
                tell(err, f"task {task_id} is no longer listed")
                return None
            if row.status in ("done", "failed", "cancelled"):
                return row
            line = f"  {row.status}: {row.current_step}" if row.current_step else f"  {row.status}"
            if row.waiting_for is not None:
                line += f"\n  {_asking(row)}"
            if line != shown:
                out.write(line + "\n")
                out.flush()
                shown = line
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), FOLLOW_POLL_S)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
    return None


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= RESULT_CHARS else text[: RESULT_CHARS - 1] + "…"
