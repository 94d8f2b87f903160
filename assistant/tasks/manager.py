"""Running delegated tasks: each in its own asyncio task (its sub-agent's LLM loop in a worker
thread), at most ``max_concurrent`` at once, the rest queued in order. Cancelling stops the
task's LLM request at once. When a task ends, ``on_finished`` hears of it (the service turns
that into a "task finished" event for the master agent).

``delegate`` and ``cancel`` may be called from any thread (the master agent's tools run in
one); the rest runs on the event loop given to ``start``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from assistant.tasks.records import TaskRecord, new_task_id
from assistant.tasks.store import INTERRUPTED, TaskStore
from assistant.tasks.subagent import Budget, SubAgent
from memory.records import utc_now

log = logging.getLogger(__name__)

MAX_GOAL_CHARS = 2_000
# How long a stopped sub-agent has to save its record before it is left behind.
STOP_GRACE_S = 5.0


class TaskError(ValueError):
    """A task request that cannot be done; the message is for whoever asked."""


@dataclass(frozen=True)
class TaskLimits:
    max_concurrent: int = 2
    budget: Budget = field(default_factory=Budget)


# Builds the sub-agent for a record (the host knows the LLM and the stores).
MakeSubAgent = Callable[[TaskRecord, threading.Event], SubAgent]


class TaskManager:
    def __init__(
        self,
        store: TaskStore,
        make: MakeSubAgent,
        limits: TaskLimits = TaskLimits(),
        on_finished: Callable[[TaskRecord], None] = lambda record: None,
    ) -> None:
        self.store = store
        self.make = make
        self.limits = limits
        self.on_finished = on_finished
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots: asyncio.Semaphore | None = None
        self._running: dict[str, SubAgent] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._cancels: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def start(self, loop: asyncio.AbstractEventLoop) -> list[TaskRecord]:
        """Begin running on ``loop``: tasks a restart interrupted are marked (and returned),
        queued ones start."""
        self._loop = loop
        self._slots = asyncio.Semaphore(self.limits.max_concurrent)
        interrupted = self.store.recover()
        for record in reversed(self.store.all()):  # oldest first
            if record.status == "queued":
                self._schedule(record)
        return interrupted

    def delegate(self, goal: str, requested_by: str = "agent") -> TaskRecord:
        goal = " ".join(goal.split())
        if not goal:
            raise TaskError("a task needs a goal")
        if len(goal) > MAX_GOAL_CHARS:
            raise TaskError(f"the goal is {len(goal):,} characters; at most {MAX_GOAL_CHARS:,}")
        if self._loop is None:
            raise TaskError("tasks cannot run yet: the service is still starting")
        record = TaskRecord(id=new_task_id(), goal=goal, requested_by=requested_by)
        self.store.save(record)
        self._loop.call_soon_threadsafe(self._schedule, record)
        return record

    def resume(self, task_id: str, requested_by: str) -> TaskRecord:
        """Run an interrupted task's goal again, as a new task."""
        record = self.store.get(task_id)
        if record is None:
            raise TaskError(f"no task {task_id}")
        if not record.resumable:
            raise TaskError(f"task {task_id} is {record.status} and cannot be resumed")
        record.resumable = False
        self.store.save(record)
        return self.delegate(record.goal, requested_by)

    def cancel(self, task_id: str, reason: str = "cancelled by the user") -> TaskRecord:
        record = self.store.get(task_id)
        if record is None:
            raise TaskError(f"no task {task_id}")
        if record.finished:
            raise TaskError(f"task {task_id} already ended ({record.status})")
        with self._lock:
            running = self._running.get(task_id)
            cancel = self._cancels.setdefault(task_id, threading.Event())
        if running is not None:
            # Its LLM request is abandoned; the record is saved by it.
            running.stop(reason, "cancelled")
        else:
            cancel.set()
            record.status = "cancelled"
            record.reason = reason
            self.store.save(record)
            self._finished(record)
        return record

    def scheduled(self) -> int:
        """Tasks queued or running in this process."""
        return len(self._tasks)

    def reported(self, task_id: str) -> None:
        """The master agent has been told the task ended."""
        record = self.store.get(task_id)
        if record is not None and not record.reported:
            record.reported = True
            self.store.save(record)

    async def close(self) -> None:
        """Stop every task (a shutdown: they are marked interrupted at the next start)."""
        for task in list(self._tasks.values()):
            task.cancel()
        with self._lock:
            for agent in self._running.values():
                agent.stop(INTERRUPTED)
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    # On the loop

    def _schedule(self, record: TaskRecord) -> None:
        task = asyncio.get_running_loop().create_task(self._run(record.id), name=record.id)
        self._tasks[record.id] = task
        task.add_done_callback(lambda _: self._tasks.pop(record.id, None))

    async def _run(self, task_id: str) -> None:
        assert self._slots is not None
        async with self._slots:
            record = self.store.get(task_id)
            with self._lock:
                cancel = self._cancels.setdefault(task_id, threading.Event())
            if record is None or record.finished or cancel.is_set():
                return
            record.status = "running"
            record.started_at = record.started_at or utc_now()
            self.store.save(record)
            agent = self.make(record, cancel)
            with self._lock:
                self._running[task_id] = agent
            work = asyncio.ensure_future(asyncio.to_thread(agent.run))
            try:
                await self._watch(agent, work)
                if work.exception() is not None:  # a bug must not leave it "running"
                    error = work.exception()
                    log.error("task %s failed", task_id, exc_info=error)
                    agent.record.status = "failed"
                    agent.record.reason = f"internal error: {error}"
                    self.store.save(agent.record)
            except asyncio.CancelledError:
                agent.stop(INTERRUPTED)
                await asyncio.wait({work}, timeout=STOP_GRACE_S)
                interrupted = agent.record
                interrupted.status, interrupted.reason = "failed", INTERRUPTED
                interrupted.resumable = True
                self.store.save(interrupted)
                raise
            finally:
                with self._lock:
                    self._running.pop(task_id, None)
                    self._cancels.pop(task_id, None)
        final = self.store.get(task_id)
        if final is not None and final.finished:
            self._finished(final)

    async def _watch(self, agent: SubAgent, work: asyncio.Future[TaskRecord]) -> None:
        """Wait for the sub-agent to end. It checks its time between steps; this also ends a
        step stuck in a request (a cancelled request ends at once). Time spent waiting for
        the user to allow a call does not count."""
        budget = self.limits.budget.seconds
        while not work.done():
            left = budget + STOP_GRACE_S - agent.active_s()
            if left <= 0:
                agent.stop(f"the time budget ({budget:.0f} s) was spent")
                break
            await asyncio.wait({work}, timeout=left)
        await asyncio.gather(work, return_exceptions=True)

    def _finished(self, record: TaskRecord) -> None:
        log.info("task %s %s", record.id, record.status)
        self.on_finished(record)
