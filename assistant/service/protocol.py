"""The service's wire protocol: one JSON object per line over the Unix socket, UTF-8.

Version 6 (2 added the voice messages, 3 the memory messages of memory_wire.py, 4 the task
messages of task_wire.py, 5 the questions of tasks waiting for the user's permission and the
day plan's requests, 6 the knowledge graph's messages of graph_wire.py). A client's
first line is ``hello``; the service answers ``welcome`` with its state and the recent
conversation. After that the client sends requests and the service sends updates to every
client at once, so two windows show the same conversation. docs/SERVICE.md describes each message.
"""

from __future__ import annotations

import json
from typing import Annotated, Literal

from pydantic import Field, TypeAdapter, ValidationError

from assistant.service.graph_wire import (
    EntityDetail,
    EntityOpen,
    EntityPage,
    EntityQuery,
    FactChange,
    FactDone,
    FactUndo,
)
from assistant.service.memory_wire import (
    CoreBlocks,
    CoreEdit,
    CoreQuery,
    Failed,
    MemoryChangedByUser,
    MemoryDelete,
    MemoryDetail,
    MemoryDone,
    MemoryEdit,
    MemoryOpen,
    MemoryPage,
    MemoryQuery,
    MemoryStats,
    MemoryUndo,
)
from assistant.service.task_wire import (
    AnswerApproval,
    ApprovalAsked,
    ApprovalSettled,
    CancelTask,
    Delegate,
    PlanDay,
    PlanDone,
    ReminderFired,
    ResumeTask,
    TaskAccepted,
    TaskRow,
    Tick,
)
from assistant.service.wire import UserText, Wire

PROTOCOL_VERSION = 7
# The longest line either side sends or accepts (a message is capped far below it).
MAX_LINE_BYTES = 1 << 20
# The longest message a user may send in one turn (a huge paste is refused, not cut).
MAX_SAY_CHARS = 8_000

ServiceState = Literal["starting", "ready", "failed", "stopping"]
Role = Literal["user", "assistant"]
VoiceMode = Literal["always", "push_to_talk", "muted"]
VoiceState = Literal[
    "off", "starting", "listening", "hearing", "thinking", "speaking", "muted", "push_to_talk"
]


class ProtocolError(Exception):
    """A line that is not a message of this protocol; the text says why, in one line."""


# Client to service


class Hello(Wire):
    type: Literal["hello"] = "hello"
    version: int = PROTOCOL_VERSION
    client: str = "client"


class Say(Wire):
    """A user turn. ``ref`` is the client's own tag, echoed so it can find its reply."""

    type: Literal["say"] = "say"
    text: UserText
    ref: str = ""
    # Set when the text was spoken: the recogniser's confidence, 0-1.
    confidence: float | None = Field(None, ge=0, le=1)


# A client sends a draft as each word is finished (and when typing pauses).
DRAFT_WORD_ENDS = (" ", ",", ".", "?", "!", ";", ":")
# A draft that ends so is likely the whole message: its reply is asked for at once.
SENTENCE_ENDS = (".", "?", "!")


class Draft(Wire):
    """What the user has typed so far, sent as each word is finished or when they pause: the
    service may read it ahead (``Agent.prepare``) so that, sent unchanged, the turn starts
    sooner (the newest draft is read next when one comes during a read). Nothing is kept."""

    type: Literal["draft"] = "draft"
    text: UserText


class Cancel(Wire):
    """Stop the reply being written (barge-in); what was delivered is kept, marked."""

    type: Literal["cancel"] = "cancel"


class Retry(Wire):
    """Try to start the LLM again after it failed."""

    type: Literal["retry"] = "retry"


class GetTasks(Wire):
    type: Literal["tasks"] = "tasks"


class Leave(Wire):
    """The client is closing; the service answers ``left`` and whether it keeps running."""

    type: Literal["leave"] = "leave"


class Stop(Wire):
    type: Literal["stop"] = "stop"


class SetVoice(Wire):
    """Listen always, only while the talk key is down, or not at all."""

    type: Literal["voice_mode"] = "voice_mode"
    mode: VoiceMode


class Talk(Wire):
    """Push-to-talk: the talk key went down (``down``) or up (the utterance ends)."""

    type: Literal["talk"] = "talk"
    down: bool


class StopSpeaking(Wire):
    """Stop the reply being spoken, as if the user had cut in."""

    type: Literal["stop_speaking"] = "stop_speaking"


class Listen(Wire):
    """Play an audio file into the microphone as if it were spoken (headless voice only)."""

    type: Literal["listen"] = "listen"
    path: str


Request = Annotated[
    Hello
    | Say
    | Draft
    | Cancel
    | Retry
    | GetTasks
    | Leave
    | Stop
    | SetVoice
    | Talk
    | StopSpeaking
    | Listen
    | MemoryQuery
    | MemoryOpen
    | MemoryEdit
    | MemoryDelete
    | MemoryUndo
    | Delegate
    | CancelTask
    | ResumeTask
    | AnswerApproval
    | PlanDay
    | Tick
    | CoreQuery
    | CoreEdit
    | EntityQuery
    | EntityOpen
    | FactChange
    | FactUndo,
    Field(discriminator="type"),
]


# Service to client


class HistoryItem(Wire):
    role: Role
    text: str


class Voice(Wire):
    """The voice loop's state; ``level_dbfs`` is the microphone level (for a meter),
    ``text`` says why voice is off or what it runs on."""

    type: Literal["voice"] = "voice"
    state: VoiceState
    mode: VoiceMode = "always"
    level_dbfs: float = -100.0
    text: str = ""


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


class ReplyChunk(Wire):
    type: Literal["chunk"] = "chunk"
    turn: int
    text: str


class ReplyEnd(Wire):
    """The whole reply; ``error`` is one line when there was none because the LLM failed."""

    type: Literal["reply_end"] = "reply_end"
    turn: int
    text: str
    interrupted: bool = False
    error: str | None = None


class ReplyCut(Wire):
    """A spoken reply was cut off by the user: ``heard`` is what had been played."""

    type: Literal["reply_cut"] = "reply_cut"
    turn: int
    heard: str


class NotHeard(Wire):
    """Sound the voice loop took for speech came to nothing (too short, or noise)."""

    type: Literal["not_heard"] = "not_heard"
    reason: str


class VoiceTimings(Wire):
    """How long each stage of a spoken turn took, in ms after the end of the user's speech."""

    type: Literal["voice_timings"] = "voice_timings"
    turn: int
    stages_ms: dict[str, float]


class Work(Wire):
    kind: Literal["reply", "queued", "ratings", "switch"]
    description: str
    seconds: float = 0.0


class Tasks(Wire):
    type: Literal["tasks"] = "tasks"
    work: list[Work]
    # Delegated tasks, newest first: those running or waiting, then the recent others.
    tasks: list[TaskRow] = []


class Left(Wire):
    type: Literal["left"] = "left"
    stays: bool
    reason: str


class Notice(Wire):
    """Something the user should read: a refused request, a setting that changed."""

    type: Literal["notice"] = "notice"
    text: str
    level: Literal["info", "warning", "error"] = "info"


class Bye(Wire):
    """The service is stopping; the connection closes after this."""

    type: Literal["bye"] = "bye"
    reason: str


Update = Annotated[
    Welcome
    | History
    | Status
    | Progress
    | UserSaid
    | ReplyStart
    | ReplyChunk
    | ReplyEnd
    | ReplyCut
    | Voice
    | VoiceTimings
    | NotHeard
    | Tasks
    | Left
    | Notice
    | Bye
    | MemoryPage
    | MemoryDetail
    | MemoryDone
    | MemoryChangedByUser
    | MemoryStats
    | CoreBlocks
    | TaskAccepted
    | ReminderFired
    | ApprovalAsked
    | ApprovalSettled
    | PlanDone
    | EntityPage
    | EntityDetail
    | FactDone
    | Failed,
    Field(discriminator="type"),
]

_requests: TypeAdapter[Request] = TypeAdapter(Request)
_updates: TypeAdapter[Update] = TypeAdapter(Update)


def encode(message: Wire) -> bytes:
    return message.model_dump_json().encode("utf-8") + b"\n"


def decode_request(line: bytes) -> Request:
    return _requests.validate_python(_object(line))


def decode_update(line: bytes) -> Update:
    return _updates.validate_python(_object(line))


def _object(line: bytes) -> object:
    try:
        return json.loads(line.decode("utf-8"))
    except UnicodeDecodeError:
        raise ProtocolError("the line is not UTF-8") from None
    except json.JSONDecodeError as error:
        raise ProtocolError(f"the line is not JSON ({error.msg})") from None


def describe(error: ValidationError | ProtocolError) -> str:
    """One line for a message that did not fit the protocol."""
    if isinstance(error, ProtocolError):
        return str(error)
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "message"
    return f"bad message ({where}: {first['msg']})"
