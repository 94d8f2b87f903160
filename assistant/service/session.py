"""What the service runs once the memory is open: the stores, the agent on them, delegated
tasks, reminders and the day planner, built together in one place (``open_session``), and
the ``Opening`` that what starts earlier waits on for them."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass
from datetime import datetime, timedelta

from assistant.agent.agent import Agent
from assistant.agent.tools import TOOLS, Stores
from assistant.agent.wiring import open_agent, open_stores
from assistant.clock import shifted_clock
from assistant.model_paths import ProfileModels
from assistant.parts import load_embedder
from assistant.proactive.agent_tools import heartbeat_tools
from assistant.proactive.dots import Dots
from assistant.proactive.intentions import IntentionStore
from assistant.proactive.watch import Watch
from assistant.protocol.conversation import HistoryItem
from assistant.service.llms import LLMs
from assistant.settings import Settings
from assistant.tasks.agent_tools import background_tools
from assistant.tasks.approvals import Approvals
from assistant.tasks.day_plan import DayPlanner
from assistant.tasks.manager import TaskLimits, TaskManager
from assistant.tasks.records import TaskRecord
from assistant.tasks.reminders import ReminderStore
from assistant.tasks.store import TaskStore
from assistant.tasks.subagent import Budget, SubAgent
from assistant.tasks.toolbox import Workspace
from memory.embedder import Embedder
from memory.graph.graph import GraphLearner, KnowledgeGraph
from memory.reflection import ReflectionWorker, Reflector
from models import ProgressCallback

# A reminder this long before an event covers it (the heartbeat does not bring it up).
REMINDED_WITHIN = timedelta(hours=6)
# The conversation's messages a client is shown when it attaches.
HISTORY_SHOWN = 40
# How a heartbeat's event reads in recall storage (events.HeartbeatTick.prompt).
HEARTBEAT_MARK = "[heartbeat "


@dataclass
class Session:
    settings: Settings
    stores: Stores
    agent: Agent
    tasks: TaskManager
    reminders: ReminderStore
    planner: DayPlanner
    intentions: IntentionStore
    # What changed since the agent last looked (the heartbeat's digest).
    watch: Watch
    clock: Callable[[], datetime]
    # Reflection and the knowledge graph's learning start once background work has an LLM
    # server of its own (``learn``).
    reflection: ReflectionWorker | None = None
    graph_learner: GraphLearner | None = None

    def plan(self, reason: str | None = None) -> None:
        """Run the day planning that is due in the background; ``reason``: something changed
        that the rest of today's plan should take in."""
        if not self.settings.tasks.day_plan:
            return
        if reason:
            self.planner.changed(reason)
        self.planner.poke()

    def heard(self, text: str) -> None:
        """The user's words: re-plan if they name a time today."""
        if self.settings.tasks.day_plan:
            self.planner.heard(text)
            self.planner.poke()

    def learn(self, llm: LLMs) -> None:
        """Start reflecting and learning facts, on background work's LLM."""
        if self.reflection is not None:
            return
        self.reflection = ReflectionWorker(
            Reflector(
                self.stores.stream,
                llm.for_background(),
                threshold=self.settings.agent.reflection_threshold,
            )
        )
        if self.settings.agent.knowledge_graph:
            graph = KnowledgeGraph(
                self.stores.graph, self.stores.graph.embedder, llm.for_background()
            )
            self.graph_learner = GraphLearner(graph, self.stores.stream, self.stores.archival)

    def history(
        self, said_first: Collection[str] = (), limit: int = HISTORY_SHOWN
    ) -> list[HistoryItem]:
        """The last ``limit`` user and assistant messages, oldest first, as clients show
        them. A message the agent wrote at a heartbeat is shown only if it was said
        (``said_first``: the texts said first), marked so."""
        items: list[HistoryItem] = []
        at_heartbeat = False
        for message in self.stores.recall.recent(limit * 3):
            if message.role == "system":
                at_heartbeat = message.text.startswith(HEARTBEAT_MARK)
            elif message.role == "user":
                at_heartbeat = False
                items.append(HistoryItem(role="user", text=message.text))
            elif message.role == "assistant" and not at_heartbeat:
                items.append(HistoryItem(role="assistant", text=message.text))
            elif message.role == "assistant" and message.text in said_first:
                items.append(HistoryItem(role="assistant", text=message.text, proactive=True))
        return items[-limit:]

    def after_turn(self) -> None:
        """New memories were added: reflect if their importance reached the threshold, and
        learn their facts."""
        for worker in (self.reflection, self.graph_learner):
            if worker is not None:
                worker.poke()

    def reflecting(self) -> bool:
        return self.reflection is not None and self.reflection.reflecting

    def ratings_pending(self) -> int:
        return self.stores.stream.ratings_pending()

    def close(self) -> None:
        for worker in (self.reflection, self.graph_learner):
            if worker is not None:
                worker.close()
        self.planner.close()
        self.stores.stream.close()


def open_session(
    settings: Settings,
    llms: LLMs,
    approvals: Approvals,
    on_task_finished: Callable[[TaskRecord], None] = lambda record: None,
    on_reminder_added: Callable[[], None] = lambda: None,
    embedder: Embedder | None = None,
    on_progress: ProgressCallback | None = None,
    clock: Callable[[], datetime] | None = None,
) -> Session:
    """The stores and the agent (no LLM needed yet: events are recorded either way), with
    the tasks, reminders and day planner beside it. ``approvals``: the questions of sub-agents
    waiting for the user's permission (the service relays them); ``on_task_finished`` and
    ``on_reminder_added`` are told when a task ends and when a reminder is added; ``clock``:
    the time the session goes by (default: the computer's, shifted by
    ``heartbeat.clock_offset_minutes``)."""
    embedder = embedder or load_embedder(settings, ProfileModels(settings, on_progress).embedder())
    clock = clock or shifted_clock(settings.heartbeat.clock_offset_minutes)
    stores = open_stores(
        settings.data_dir,
        embedder,
        settings.agent.core_memory_chars,
        settings.agent.graph_weight if settings.agent.knowledge_graph else 0.0,
        clock=clock,
    )
    data = settings.data_dir
    reminders = ReminderStore(data / "reminders.json")
    intentions = IntentionStore(data / "intentions.json")
    limits = settings.tasks

    def sub_agent(record: TaskRecord, cancel: threading.Event) -> SubAgent:
        return SubAgent(
            record,
            llms.for_background(),
            Workspace(
                stores,
                reminders,
                clock,
                approvals,
                allowed_paths=tuple(settings.tasks.allowed_paths),
                mcp_servers=tuple(settings.tasks.mcp_servers),
                mcp_timeout_s=settings.tasks.mcp_timeout_s,
                log_dir=settings.log_dir,
            ),
            tasks.store.save,
            tasks.limits.budget,
            cancel,
        )

    tasks = TaskManager(
        TaskStore(data / "tasks"),
        sub_agent,
        TaskLimits(
            max_concurrent=limits.max_concurrent,
            budget=Budget(
                steps=limits.max_steps,
                tokens=limits.max_tokens,
                seconds=limits.max_seconds,
            ),
        ),
        on_finished=on_task_finished,
    )
    planner = DayPlanner(
        stores.stream,
        llms.for_background(),
        clock,
        about_user=lambda: stores.core.blocks["human"].value,
        context=lambda now: _day_context(reminders, tasks, intentions, now),
    )

    def replan(reason: str) -> None:
        if settings.tasks.day_plan:
            planner.changed(reason)
            planner.poke()

    extra = background_tools(tasks, reminders, clock, on_reminder_added, heard=lambda: agent.heard)
    agent = open_agent(
        settings,
        llms.llm,
        stores,
        llms.gate,
        tools=(*TOOLS, *extra, *heartbeat_tools(intentions, clock, replan, tasks.delegate)),
        background=llms.for_compaction(),
    )
    watch = Watch(
        stores.stream,
        reminders,
        tasks.store,
        intentions,
        Dots(
            stores.stream,
            stores.graph if settings.agent.knowledge_graph else None,
            reminded=lambda when: reminders.set_before(when, REMINDED_WITHIN),
        ),
        data / "heartbeat.json",
        clock,
        plan_today=planner.today,
        ahead=timedelta(minutes=settings.tasks.heartbeat_minutes),
    )
    return Session(settings, stores, agent, tasks, reminders, planner, intentions, watch, clock)


def _day_context(
    reminders: ReminderStore, tasks: TaskManager, intentions: IntentionStore, now: datetime
) -> list[str]:
    """Besides memories, what the day plan is made around: today's reminders, what the agent
    means to come back to today (its pending intentions), and the tasks under way."""
    lines = [
        f"Reminder at {r.due_at.astimezone(now.tzinfo):%H:%M}: {r.text}"
        for r in reminders.pending()
        if r.due_at.astimezone(now.tzinfo).date() == now.date()
    ]
    lines += [
        f"Intention at {i.due_at.astimezone(now.tzinfo):%H:%M}: {i.text}"
        for i in intentions.pending()
        if i.due_at.astimezone(now.tzinfo).date() == now.date()
    ]
    lines += [f"Background task under way: {r.goal}" for r in tasks.store.all() if not r.finished]
    return lines


def start_llm(llms: LLMs, agent: Agent, settings: Settings | None = None) -> str | None:
    """Start (or switch to) the LLM of ``settings`` for ``agent``; returns a warning if the
    warm-up request failed. Raises one of STARTUP_ERRORS, leaving any running LLM in use."""
    llms.start(settings)
    # A compaction's new prompt is read ahead on a local server (another endpoint would be
    # billed for it).
    agent.reads_ahead = llms.local
    # A window saved past the compaction share is summarised before the first turn needs it.
    agent.compact_if_due()
    # Have the server read the conversation's prompt as it stands (restored from its saved
    # KV cache, that is only the newest part), so the first real turn reads only its own
    # message.
    return agent.read_ahead()


def close_session(session: Session | None, llms: LLMs) -> None:
    """Let go of the session (``None``: the memory was not open) and the LLMs it used."""
    # What the background server is writing (a graph extraction, a reflection) is left
    # for the next start rather than waited for.
    llms.gate.close()
    if session is not None:
        session.close()
    llms.close()


class Opening:
    """The session, for what starts before the memory is open: ``wait`` for it; ``session``
    is None until then, and when the memory could not be opened."""

    def __init__(self) -> None:
        self.session: Session | None = None
        self._settled = asyncio.Event()

    def opened(self, session: Session | None) -> None:
        self.session = session
        self._settled.set()

    async def wait(self) -> Session | None:
        await self._settled.wait()
        return self.session

    def failed(self) -> bool:
        """The memory could not be opened."""
        return self._settled.is_set() and self.session is None
