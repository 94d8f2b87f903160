"""What the service runs: the memory stores, the agent, and the LLM (the configured endpoint
or a local server), with the endpoint swappable while it runs.

Blocking calls, for worker threads: the service's event loop never waits on a model.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from assistant.agent.agent import Agent
from assistant.agent.core_memory import CoreMemoryError
from assistant.agent.events import Event
from assistant.agent.session import open_agent, open_stores
from assistant.agent.tools import TOOLS, Stores
from assistant.agent.turn import Turn
from assistant.llm.client import LLMError
from assistant.llm.priority import BackgroundLLM, ForegroundGate
from assistant.llm.runtime import LLMRuntime
from assistant.llm.server import LLMServerError, ServerStatus, StatusCallback
from assistant.llm.switch import SwitchableLLM
from assistant.model_paths import ProfileModels
from assistant.parts import load_embedder
from assistant.settings import Settings
from assistant.tasks.agent_tools import background_tools
from assistant.tasks.approvals import Approvals
from assistant.tasks.day_plan import DayPlanner
from assistant.tasks.manager import TaskLimits, TaskManager
from assistant.tasks.records import TaskRecord
from assistant.tasks.reminders import ReminderStore, local_now
from assistant.tasks.store import TaskStore
from assistant.tasks.subagent import Budget, SubAgent
from assistant.tasks.toolbox import Workspace
from memory.database import DatabaseError
from memory.embedder import Embedder
from memory.graph.graph import GraphLearner, KnowledgeGraph
from memory.reflection import ReflectionWorker, Reflector
from models import ModelError, ProgressCallback

log = logging.getLogger(__name__)

STARTUP_ERRORS = (
    ModelError,
    LLMServerError,
    LLMError,
    DatabaseError,
    CoreMemoryError,
    OSError,
)


@dataclass(frozen=True)
class Conversation:
    """One message of the conversation as clients show it."""

    role: str
    text: str


class AgentHost:
    def __init__(
        self,
        settings: Settings,
        on_progress: ProgressCallback | None = None,
        on_status: StatusCallback | None = None,
        embedder: Embedder | None = None,
        approvals: Approvals | None = None,
        on_task_finished: Callable[[TaskRecord], None] = lambda record: None,
        on_reminder_added: Callable[[], None] = lambda: None,
    ) -> None:
        """``approvals``: the questions of sub-agents waiting for the user's permission (the
        service relays them); ``on_task_finished`` and ``on_reminder_added`` are told when a
        task ends and when a reminder is added."""
        self.settings = settings
        self.on_progress = on_progress
        self.on_status = on_status
        self.llm = SwitchableLLM()
        # Background work's LLM: the runtime's background server (waited for while it
        # starts); for remote endpoints, the conversation's client.
        self.background = SwitchableLLM()
        self.gate = ForegroundGate()
        self.runtime: LLMRuntime | None = None
        self.stores: Stores | None = None
        self.agent: Agent | None = None
        self._embedder = embedder
        self._switching = threading.Lock()
        self.reflection: ReflectionWorker | None = None
        self.graph_learner: GraphLearner | None = None
        self.tasks: TaskManager | None = None
        self.reminders: ReminderStore | None = None
        self.planner: DayPlanner | None = None
        self.on_task_finished = on_task_finished
        self.on_reminder_added = on_reminder_added
        self.approvals = approvals or Approvals()

    def open_memory(self) -> Agent:
        """The stores and the agent (no LLM needed yet: events are recorded either way)."""
        if self.agent is None:
            embedder = self._embedder or load_embedder(
                self.settings, ProfileModels(self.settings, self.on_progress).embedder()
            )
            self.stores = open_stores(
                self.settings.data_dir,
                embedder,
                self.settings.agent.core_memory_chars,
                self.settings.agent.graph_weight if self.settings.agent.knowledge_graph else 0.0,
            )
            data = self.settings.data_dir
            self.reminders = ReminderStore(data / "reminders.json")
            limits = self.settings.tasks
            self.tasks = TaskManager(
                TaskStore(data / "tasks"),
                self._sub_agent,
                TaskLimits(
                    max_concurrent=limits.max_concurrent,
                    budget=Budget(
                        steps=limits.max_steps,
                        tokens=limits.max_tokens,
                        seconds=limits.max_seconds,
                    ),
                ),
                on_finished=self.on_task_finished,
            )
            self.planner = DayPlanner(
                self.stores.stream,
                BackgroundLLM(self.background, self.gate),
                local_now,
                about_user=lambda: self.stores.core.blocks["human"].value if self.stores else "",
                context=self._day_context,
            )
            extra = background_tools(
                self.tasks,
                self.reminders,
                local_now,
                self.on_reminder_added,
                heard=lambda: self.agent.heard if self.agent is not None else "",
            )
            self.agent = open_agent(
                self.settings,
                self.llm,
                self.stores,
                self.gate,
                tools=(*TOOLS, *extra),
                background=BackgroundLLM(self.background, self.gate, self._background_apart),
            )
        return self.agent

    def plan(self, reason: str | None = None) -> None:
        """Run the day planning that is due in the background; ``reason``: something changed
        that the rest of today's plan should take in."""
        if self.planner is None or not self.settings.tasks.day_plan:
            return
        if reason:
            self.planner.changed(reason)
        self.planner.poke()

    def heard(self, text: str) -> None:
        """The user's words: re-plan if they name a time today."""
        if self.planner is not None and self.settings.tasks.day_plan:
            self.planner.heard(text)
            self.planner.poke()

    def _day_context(self, now: datetime) -> list[str]:
        """Besides memories, what the day plan is made around: today's reminders and the
        tasks under way."""
        lines = []
        if self.reminders is not None:
            lines += [
                f"Reminder at {r.due_at.astimezone(now.tzinfo):%H:%M}: {r.text}"
                for r in self.reminders.pending()
                if r.due_at.astimezone(now.tzinfo).date() == now.date()
            ]
        if self.tasks is not None:
            lines += [
                f"Background task under way: {r.goal}"
                for r in self.tasks.store.all()
                if not r.finished
            ]
        return lines

    def _sub_agent(self, record: TaskRecord, cancel: threading.Event) -> SubAgent:
        assert self.stores is not None and self.reminders is not None and self.tasks is not None
        return SubAgent(
            record,
            BackgroundLLM(self.background, self.gate),
            Workspace(
                self.stores,
                self.reminders,
                local_now,
                self.approvals,
                allowed_paths=tuple(self.settings.tasks.allowed_paths),
                mcp_servers=tuple(self.settings.tasks.mcp_servers),
                mcp_timeout_s=self.settings.tasks.mcp_timeout_s,
                log_dir=self.settings.log_dir,
            ),
            self.tasks.store.save,
            self.tasks.limits.budget,
            cancel,
        )

    def start_llm(self, settings: Settings | None = None) -> str | None:
        """Start (or switch to) the LLM of ``settings``; returns a warning if the warm-up
        request failed. Raises one of STARTUP_ERRORS, leaving any running LLM in use."""
        with self._switching:
            settings = settings or self.settings
            runtime = LLMRuntime(settings, ProfileModels(settings, self.on_progress), self._status)
            try:
                client = runtime.start()
            except BaseException:
                runtime.stop()
                raise
            old_runtime, self.runtime = self.runtime, runtime
            self.settings = settings
            self.llm.use(client)
            if runtime.server is None:
                self.background.use(client)
            else:
                # Background work waits for its own server (start_background) rather than
                # take this one's: measured, a day plan written on it while the other
                # started made the next turn read its whole prompt again (17 s).
                self.background.coming(
                    "the background LLM server is starting", settings.llm.startup_timeout_s
                )
            self._read_ahead_when_local()
            if old_runtime is not None:
                old_runtime.stop()
        return self._warm_up()

    def start_background(self) -> None:
        """Give background work its own server (after the conversation's is up and warm, so
        the two do not start at once on a small machine)."""
        with self._switching:
            if self.runtime is None:
                return
            try:
                self.background.use(self.runtime.start_background())
            except STARTUP_ERRORS as error:
                log.warning(
                    "no background LLM server (%s); background work shares the main one", error
                )
                if self.runtime.client is not None:
                    self.background.use(self.runtime.client)
            if self.reflection is None and self.stores is not None:
                self.reflection = ReflectionWorker(
                    Reflector(
                        self.stores.stream,
                        BackgroundLLM(self.background, self.gate),
                        threshold=self.settings.agent.reflection_threshold,
                    )
                )
                if self.settings.agent.knowledge_graph:
                    graph = KnowledgeGraph(
                        self.stores.graph,
                        self.stores.graph.embedder,
                        BackgroundLLM(self.background, self.gate),
                    )
                    self.graph_learner = GraphLearner(
                        graph, self.stores.stream, self.stores.archival
                    )

    def _background_apart(self) -> bool:
        """Background work has a server of its own (at idle priority, or another endpoint's),
        so it cannot slow a reply."""
        client = self.background.client
        return client is not None and client is not self.llm.client

    def _read_ahead_when_local(self) -> None:
        """A compaction's new prompt is read ahead on a local server (another endpoint
        would be billed for it)."""
        runtime = self.runtime
        self.open_memory().reads_ahead = runtime is not None and runtime.server is not None

    def llm_failed(self, reason: str) -> None:
        for llm in (self.llm, self.background):
            llm.unavailable(f"the LLM is unavailable: {reason}")

    def describe_endpoint(self) -> str:
        client = self.llm.client
        if client is not None:
            return client.endpoint.label
        return ProfileModels(self.settings).describe_llm()

    def respond(
        self,
        event: Event,
        on_text: Callable[[str], None],
        cancel: threading.Event,
        on_stage: Callable[[str], None] = lambda stage: None,
    ) -> Turn:
        return self.open_memory().respond(event, on_text=on_text, cancel=cancel, on_stage=on_stage)

    def note(self, event: Event) -> None:
        self.open_memory().note(event)

    def read_draft(self, text: str, speculate: bool = False) -> bool:
        """Read a draft ahead, or (``speculate``) ask for its reply now, on the local server
        only (another endpoint would be billed for every pause in typing or speech)."""
        if self.agent is None or self.runtime is None or self.runtime.server is None:
            return False
        return self.agent.speculate(text) if speculate else self.agent.prepare(text)

    def heard_only(self, heard: str) -> None:
        """The last reply was spoken and cut off: only ``heard`` was played."""
        self.open_memory().heard_only(heard)

    def history(self, limit: int) -> list[Conversation]:
        """The last ``limit`` user and assistant messages, oldest first."""
        if self.stores is None:
            return []
        messages = [
            Conversation(m.role, m.text)
            for m in self.stores.recall.recent(limit * 3)
            if m.role in ("user", "assistant")
        ]
        return messages[-limit:]

    def after_turn(self) -> None:
        """New memories were added: reflect if their importance reached the threshold, and
        learn their facts."""
        for worker in (self.reflection, self.graph_learner):
            if worker is not None:
                worker.poke()

    def reflecting(self) -> bool:
        return self.reflection is not None and self.reflection.reflecting

    def ratings_pending(self) -> int:
        return self.stores.stream.ratings_pending() if self.stores is not None else 0

    def close(self) -> None:
        # What the background server is writing (a graph extraction, a reflection) is left
        # for the next start rather than waited for.
        self.gate.close()
        for worker in (self.reflection, self.graph_learner):
            if worker is not None:
                worker.close()
        if self.planner is not None:
            self.planner.close()
        if self.stores is not None:
            self.stores.stream.close()
        if self.runtime is not None:
            self.runtime.close()

    def _warm_up(self) -> str | None:
        """Have the server read the conversation's prompt as it stands (restored from its
        saved KV cache, that is only the newest part), so the first real turn reads only its
        own message."""
        return self.open_memory().read_ahead()

    def _status(self, status: ServerStatus) -> None:
        if self.on_status is not None:
            self.on_status(status)
