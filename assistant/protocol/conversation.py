"""The protocol's conversation messages: attaching, the turns every client sees, the
service's state, and leaving or stopping it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from assistant.protocol.common import PROTOCOL_VERSION, ClientText, Wire
from assistant.protocol.memory import MemoryStats
from assistant.protocol.voice import Voice

# The longest message a user may send in one turn (a huge paste is refused, not cut).
MAX_SAY_CHARS = 8_000
# A client sends a draft as each word is finished (and when typing pauses).
DRAFT_WORD_ENDS = (" ", ",", ".", "?", "!", ";", ":")
# A draft that ends so is likely the whole message: its reply is asked for at once.
SENTENCE_ENDS = (".", "?", "!")

ServiceState = Literal["starting", "ready", "failed", "stopping"]
Role = Literal["user", "assistant"]


# Client to service


class Hello(Wire):
    type: Literal["hello"] = "hello"
    version: int = PROTOCOL_VERSION
    client: str = "client"


class Say(Wire):
    """A user turn. ``ref`` is the client's own tag, echoed so it can find its reply."""

    type: Literal["say"] = "say"
    text: ClientText
    ref: str = ""
    # Set when the text was spoken: the recogniser's confidence, 0-1.
    confidence: float | None = Field(None, ge=0, le=1)


class Draft(Wire):
    """What the user has typed so far, sent as each word is finished or when they pause: the
    service may read it ahead (``Agent.prepare``) so that, sent unchanged, the turn starts
    sooner (the newest draft is read next when one comes during a read). Nothing is kept."""

    type: Literal["draft"] = "draft"
    text: ClientText


class Cancel(Wire):
    """Stop the reply being written (barge-in); what was delivered is kept, marked."""

    type: Literal["cancel"] = "cancel"


class Retry(Wire):
    """Try to start the LLM again after it failed."""

    type: Literal["retry"] = "retry"


class Leave(Wire):
    """The client is closing; the service answers ``left`` and whether it keeps running."""

    type: Literal["leave"] = "leave"


class Stop(Wire):
    type: Literal["stop"] = "stop"


ConversationRequest = Hello | Say | Draft | Cancel | Retry | Leave | Stop


# Service to client


class HistoryItem(Wire):
    role: Role
    text: str
    # Said first by the assistant at a heartbeat, unasked.
    proactive: bool = False


class Welcome(Wire):
    type: Literal["welcome"] = "welcome"
    version: int = PROTOCOL_VERSION
    pid: int
    state: ServiceState
    text: str
    endpoint: str
    background: bool
    history: list[HistoryItem] = []
    voice: Voice = Voice(state="off")
    # None until the memory has opened.
    memory: MemoryStats | None = None
    # Every setting as the service runs with it (secrets as digests): a command given other
    # ones says so instead of silently using the service's.
    settings: dict[str, str] = {}


class History(Wire):
    """The recent conversation, sent when the memory opens after a client attached."""

    type: Literal["history"] = "history"
    items: list[HistoryItem]


class Status(Wire):
    """The service's LLM is starting, ready, failed or stopping; ``text`` says more."""

    type: Literal["status"] = "status"
    state: ServiceState
    text: str
    endpoint: str = ""


class Progress(Wire):
    """Model weights being assembled or verified (a first run takes a while)."""

    type: Literal["progress"] = "progress"
    label: str
    done: int
    total: int
    # "assembling" (the first run: weights built from their packages) or "verifying".
    action: str = "verifying"


class UserSaid(Wire):
    """A turn some client sent, as the service accepted it (``turn`` numbers the replies)."""

    type: Literal["user"] = "user"
    turn: int
    text: str
    client: str
    ref: str = ""
    confidence: float | None = None


class ReplyStart(Wire):
    type: Literal["reply_start"] = "reply_start"
    turn: int
    # A message the assistant says first (a heartbeat found something), not a reply.
    proactive: bool = False


class ReplyChunk(Wire):
    type: Literal["chunk"] = "chunk"
    turn: int
    text: str


class ReplyEnd(Wire):
    """The whole reply; ``error`` is one line when there was none because the LLM failed.
    ``stages_ms``: when each stage of the turn happened, in ms after the service accepted the
    message (``started``, ``memories``, ``prompt_sent``, ``first_text``, ``first_word``,
    ``reply_end``; those that happened)."""

    type: Literal["reply_end"] = "reply_end"
    turn: int
    text: str
    interrupted: bool = False
    error: str | None = None
    stages_ms: dict[str, float] = {}


class ReplyCut(Wire):
    """A spoken reply was cut off by the user: ``heard`` is what had been played."""

    type: Literal["reply_cut"] = "reply_cut"
    turn: int
    heard: str


class Left(Wire):
    type: Literal["left"] = "left"
    stays: bool
    reason: str


class Bye(Wire):
    """The service is stopping; the connection closes after this."""

    type: Literal["bye"] = "bye"
    reason: str


ConversationUpdate = (
    Welcome
    | History
    | Status
    | Progress
    | UserSaid
    | ReplyStart
    | ReplyChunk
    | ReplyEnd
    | ReplyCut
    | Left
    | Bye
)
