"""The service's wire protocol: one JSON object per line over the Unix socket, UTF-8.

Version 9 (2 added the voice messages, 3 the memory messages, 4 the task messages, 5 the
questions of tasks waiting for the user's permission and the day plan's requests, 6 the
knowledge graph's messages, 7 the pieces of documents a fact was learnt from, 8 the agent's
intentions, the plans made before the planner was held to the user's time, and a message
the assistant says first marked as such, 9 what the MCP server asks: adding a memory,
searching recall storage, one task, today's plan, listing and setting reminders). A client's
first line is ``hello``; the service answers ``welcome`` with its state and the recent
conversation. After that the client sends requests and the service sends updates to every
client at once, so two windows show the same conversation. docs/SERVICE.md describes each
message.

One module per domain (conversation, voice, memory, graph, tasks) holds its messages and the
unions of its requests and updates; the unions here are built from those, so a new message is
written in its domain's module only.
"""

from __future__ import annotations

import json
from typing import Annotated

from pydantic import Field, TypeAdapter, ValidationError

from assistant.protocol.common import CommonUpdate, ProtocolError, Wire
from assistant.protocol.conversation import ConversationRequest, ConversationUpdate
from assistant.protocol.graph import GraphAnswer, GraphRequest
from assistant.protocol.memory import MemoryRequest, MemoryUpdate
from assistant.protocol.tasks import TaskRequest, TaskUpdate
from assistant.protocol.voice import VoiceRequest, VoiceUpdate

Request = Annotated[
    ConversationRequest | VoiceRequest | MemoryRequest | GraphRequest | TaskRequest,
    Field(discriminator="type"),
]
Update = Annotated[
    CommonUpdate | ConversationUpdate | VoiceUpdate | MemoryUpdate | GraphAnswer | TaskUpdate,
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
