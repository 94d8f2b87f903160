"""Opening the agent on the user's data folder: the memory stores, core memory and the context
window, wired to one LLM client and one embedder."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from assistant.agent.actions import Action
from assistant.agent.agent import Agent
from assistant.agent.compaction import Compactor, json_summariser
from assistant.agent.context import ContextConfig, ContextWindow
from assistant.agent.context_store import load_context
from assistant.agent.core_memory import CoreMemory
from assistant.agent.importance_anchors import ANCHORS
from assistant.agent.instructions import instructions
from assistant.agent.tools import TOOLS, SendMessage, Stores, Tool
from assistant.agent.turn import FALLBACK_MESSAGE, AgentConfig
from assistant.llm.priority import ForegroundGate
from assistant.llm.protocols import AgentLLM, CancellableJsonLLM
from assistant.llm.tokens import counter_of
from assistant.settings import Settings
from memory.archival import ArchivalStore
from memory.database import open_database
from memory.embedder import Embedder
from memory.graph.search import RETRIEVAL_GRAPH_SEARCH, GraphRelevance
from memory.graph.store import GraphStore
from memory.importance import ImportanceScale
from memory.locking import WriteLock
from memory.recall import RecallStore
from memory.records import utc_now
from memory.rerating import RATING_FILE, ImportanceRating
from memory.stream import MemoryConfig, MemoryStream

# Recent messages put back into the window when the agent starts with no saved window (the
# rest stay in recall).
RESUMED_MESSAGES = 12
CONTEXT_FILE = "context.json"
# The design the conversation benchmark measured best for each profile's model (docs/REPLIES.md).
DEFAULT_REPLY_DESIGN = {"fast": "plain", "quality": "plain"}
# The share of the window at which it is summarised, by reply design (settings.py says why).
DEFAULT_COMPACT_SHARE = {"plain": 0.1, "json_action": 0.2, "short_json": 0.2}


def open_stores(
    data_dir: Path,
    embedder: Embedder,
    core_memory_chars: int,
    graph_weight: float = 0.0,
    rate: bool = True,
    clock: Callable[[], datetime] = utc_now,
) -> Stores:
    """The stores in ``data_dir``; ``graph_weight``: how much the knowledge graph's search
    adds to a memory's relevance; ``rate``: rate new memories' importance on the app's scale
    (else they keep the default, for tests that order memories by hand)."""
    database = open_database(data_dir)
    lock = WriteLock(data_dir / "memory.lock")
    graph = GraphStore(database, lock, embedder)
    stream = MemoryStream(
        database,
        lock,
        embedder,
        rating=(
            ImportanceRating(ImportanceScale(embedder, ANCHORS), data_dir / RATING_FILE)
            if rate
            else None
        ),
        clock=clock,
        config=MemoryConfig(graph_weight=graph_weight),
        graph=GraphRelevance(graph, RETRIEVAL_GRAPH_SEARCH),
    )
    return Stores(
        core=CoreMemory(data_dir / "core_memory.json", limit=core_memory_chars),
        stream=stream,
        recall=RecallStore(database, lock, embedder),
        archival=ArchivalStore(database, lock, embedder),
        graph=graph,
    )


def open_agent(
    settings: Settings,
    llm: AgentLLM,
    stores: Stores,
    gate: ForegroundGate | None = None,
    tools: Sequence[Tool] = TOOLS,
    background: CancellableJsonLLM | None = None,
) -> Agent:
    """The agent on ``stores``, its window as it was saved at the end of the last turn (else
    rebuilt from recall storage); ``background`` writes the summaries of compactions (None:
    only the blocking flush summarises, on ``llm``)."""
    gate = gate or ForegroundGate()
    design = reply_design(settings)
    context = ContextWindow(
        instructions([tool for tool in tools if not tool.tick_only], design),
        stores.core,
        ContextConfig(
            window_tokens=settings.llm.context_window,
            warning_share=settings.agent.memory_pressure,
            compact_share=settings.agent.compact_share or DEFAULT_COMPACT_SHARE[design],
        ),
        count=counter_of(llm),
    )
    context_path = settings.data_dir / CONTEXT_FILE
    if not load_context(context_path, context):
        _resume_from_recall(context, stores, plain=design == "plain")
    while context.pressure() > settings.agent.memory_pressure and context.evict():
        pass
    config = AgentConfig(
        max_steps=settings.agent.max_steps,
        retrieved_memories=settings.agent.retrieved_memories,
        least_similarity=settings.agent.least_similarity,
        more_similarity=settings.agent.more_similarity,
        temperature=settings.agent.temperature,
        reply_design=design,
        reply_checks=tuple(settings.agent.reply_checks),
    )
    return Agent(
        llm,
        stores,
        context,
        config,
        tools=tools,
        gate=gate,
        compactor=(
            Compactor(json_summariser(background), gate) if background is not None else None
        ),
        context_path=context_path,
    )


def reply_design(settings: Settings) -> str:
    """The reply design the agent uses. An endpoint with native tool calls (another server's,
    unless told otherwise) keeps MemGPT's function chaining and the full instructions, whatever
    this setting says; the local server's model gets the design set, or by default the one
    measured best for the profile."""
    llm = settings.llm
    native = llm.tool_calling == "native" or (llm.tool_calling == "auto" and bool(llm.base_url))
    design = settings.agent.reply_design
    if native:
        return "json_action"
    if design == "auto":
        return DEFAULT_REPLY_DESIGN.get(settings.profile, "json_action")
    return design


def _resume_from_recall(context: ContextWindow, stores: Stores, plain: bool = False) -> None:
    for message in stores.recall.recent(RESUMED_MESSAGES):
        if message.role == "user":
            context.push({"role": "user", "content": message.text})
        elif message.role == "assistant" and message.text != FALLBACK_MESSAGE:
            # The apology said when a turn failed stays out: small models copy it.
            said = Action("send_message", SendMessage(message=message.text), False)
            kept = message.text if plain else said.as_json()
            context.push({"role": "assistant", "content": kept})
