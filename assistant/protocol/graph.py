"""The protocol's knowledge-graph messages: the memory screen's entity view asks for entities
and their facts, and corrects, retires or reinstates a fact. As with memory.py, each
request carries the client's ``ref`` and its answer (or ``Failed``) echoes it; a change also
goes to every client as ``MemoryChangedByUser``, and to the agent before its next turn.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from assistant.protocol.common import Answer, ClientText, Wire
from assistant.protocol.memory import ChangeRow, MemoryRow

# The most entities one page may ask for.
MAX_ENTITY_PAGE = 500

FactAction = Literal["correct", "retire", "reinstate"]


# Client to service


class EntityQuery(Wire):
    """Entities whose name or alias holds ``query`` (all when empty), most facts first."""

    type: Literal["entity_query"] = "entity_query"
    ref: str
    query: ClientText = ""
    page: int = Field(1, ge=1)
    page_size: int = Field(50, ge=1, le=MAX_ENTITY_PAGE)


class EntityOpen(Wire):
    type: Literal["entity_open"] = "entity_open"
    ref: str
    id: str


class FactChange(Wire):
    """``correct``: the parts given replace the fact's (a name becomes the entity of that
    name); ``retire``: the fact no longer holds; ``reinstate``: a past fact holds again."""

    type: Literal["fact_change"] = "fact_change"
    ref: str
    id: str
    action: FactAction
    subject: ClientText | None = None
    relation: ClientText | None = None
    object: ClientText | None = None


class FactUndo(Wire):
    type: Literal["fact_undo"] = "fact_undo"
    ref: str
    change_id: str


GraphRequest = EntityQuery | EntityOpen | FactChange | FactUndo


# Service to client


class EntityRow(Wire):
    id: str
    name: str
    aliases: list[str]
    current: int  # facts that hold
    past: int  # facts that held once


class EntityPage(Answer):
    type: Literal["entity_page"] = "entity_page"
    rows: list[EntityRow]
    total: int
    page: int
    page_size: int


class PassageRow(Wire):
    """A piece of a document in archival storage that a fact was learnt from."""

    id: str
    title: str | None
    text: str
    created_at: datetime


class FactRow(Wire):
    id: str
    subject: str
    subject_name: str
    relation: str
    object: str
    object_name: str
    hypothesis: bool
    valid_from: datetime
    valid_until: datetime | None = None
    # The fact that replaced this one, in words (None: none, or retired by the user).
    replaced_by: str | None = None
    # The memories it was learnt from (the ones still there).
    memories: list[MemoryRow] = []
    # The pieces of documents it was learnt from (the ones still there).
    passages: list[PassageRow] = []


class EntityDetail(Answer):
    type: Literal["entity_detail"] = "entity_detail"
    entity: EntityRow
    # Current facts first, then past ones, newest first in each.
    facts: list[FactRow]
    # Changes the user made to these facts, newest first.
    changes: list[ChangeRow]


class FactDone(Answer):
    type: Literal["fact_done"] = "fact_done"
    fact: FactRow
    text: str


GraphAnswer = EntityPage | EntityDetail | FactDone
