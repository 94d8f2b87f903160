"""One turn of the agent: its settings, what it hears and where its reply goes, what it led to,
and the words code says in it instead of the model."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from assistant.agent.checks.pipeline import NAMES
from memory.scoring import RetrievalWeights

FALLBACK_MESSAGE = "Sorry, I could not put a reply together just now. Please try again."
INTERRUPTED = " [interrupted]"
# Said at once when a request goes to a tool that speaks for itself (``Dispatcher.acknowledge``).
ACKNOWLEDGED = "Okay."


def no_stage(stage: str) -> None:
    """Nobody is told of the turn's stages."""


# How many of the memories shown need only clear ``least_similarity``.
SURE_MEMORIES = 2


@dataclass(frozen=True)
class AgentConfig:
    # Steps one event may take (a tool call that asks for a heartbeat chains another).
    max_steps: int = 6
    # Malformed actions sent back to the model for correction per event, before the fallback.
    max_errors: int = 2
    # Attempts at reaching an endpoint that is down, with back-off_s, 2 * backoff_s, ... between.
    attempts: int = 3
    backoff_s: float = 1.0
    retrieved_memories: int = 5
    # Answering a question needs what is relevant more than what is recent: on LoCoMo the
    # paper's equal weights found 0.069 of the evidence in the top 10, relevance alone 0.806
    # (docs/BENCHMARKS.md). Recency and importance still break near-ties.
    retrieval_weights: RetrievalWeights = field(
        default_factory=lambda: RetrievalWeights(recency=0.25, importance=0.25, relevance=1.0)
    )
    # A memory shown only when it is this near the event in meaning (cosine of the
    # embeddings): the best of 1,000 unrelated ones (0.06-0.30) were shown with every small-talk
    # message, read by the server at each turn and taken as context by a 0.5B model.
    least_similarity: float = 0.3
    # Memories past the first ``SURE_MEMORIES`` shown only when this near: in a lived-in folder
    # the tail of five, each just past the floor, was most of the tokens a turn added.
    more_similarity: float = 0.4
    temperature: float = 0.3
    # How the reply is written where the endpoint has no native tool calls (settings.py's
    # ReplyDesign, resolved): "plain", "json_action" or "short_json".
    reply_design: str = "json_action"
    # The checks each reply passes through (checks/pipeline.py keeps their order).
    reply_checks: tuple[str, ...] = NAMES


@dataclass(frozen=True)
class TurnIO:
    """What one turn hears, and where its reply goes as it is written."""

    # The user's words in the turn (empty for an event not from the user).
    heard: str
    # Each piece of a reply as it is written.
    on_text: Callable[[str], None]
    # Set, it stops a reply mid-stream (the delivered part is kept, marked).
    cancel: threading.Event
    # Hears "memories" (retrieved) and "prompt_sent" (the first request).
    on_stage: Callable[[str], None] = no_stage


@dataclass(frozen=True)
class Step:
    tool: str
    arguments: dict[str, Any]
    result: str
    failed: bool = False


@dataclass
class Turn:
    """What one event led to."""

    reply: str = ""
    steps: list[Step] = field(default_factory=list)
    interrupted: bool = False
    # Malformed actions the model was told to correct.
    errors: list[str] = field(default_factory=list)
    # One line when the LLM could not be used (the event itself is kept).
    error: str | None = None
    flushed: bool = False
    # A word already said for a tool that speaks for itself (ACKNOWLEDGED), until its
    # confirmation follows in the same message or it is kept alone.
    ahead: str = ""
