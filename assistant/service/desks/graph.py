"""The knowledge graph as clients see it: entities and their facts as wire rows, and the
user's corrections carried out through :class:`memory.graph.edit.FactEditor`.

Blocking (LanceDB, the embedder): the service calls it from worker threads.
"""

from __future__ import annotations

from typing import get_args

from assistant.agent.tools import Stores
from assistant.protocol.graph import (
    EntityDetail,
    EntityOpen,
    EntityPage,
    EntityQuery,
    EntityRow,
    FactChange,
    FactDone,
    FactRow,
    FactUndo,
    GraphRequest,
    PassageRow,
)
from assistant.service.desks.common import InWorker, Reply, change_row, quote, row_of
from assistant.service.requests import Requests
from memory.archival import ArchivalStore
from memory.graph.edit import FactEditError, FactEditor
from memory.graph.store import Entity, GraphStore, Triplet
from memory.stream import MemoryStream


def register(requests: Requests, in_worker: InWorker) -> None:
    for kind in get_args(GraphRequest):
        requests.add(kind, in_worker(answer))


def answer(stores: Stores, request: GraphRequest) -> Reply:
    desk = GraphDesk(stores)
    match request:
        case EntityQuery():
            return desk.entities(request), None
        case EntityOpen():
            return desk.entity(request), None
        case FactChange():
            done = desk.change(request)
        case FactUndo():
            done = desk.undo(request)
    return done, (done.fact.id, done.text)


class GraphDesk:
    def __init__(self, stores: Stores) -> None:
        self.store: GraphStore = stores.graph
        self.stream: MemoryStream = stores.stream
        self.archival: ArchivalStore = stores.archival
        self.editor = FactEditor(self.store)

    # Reading

    def entities(self, request: EntityQuery) -> EntityPage:
        entities, _ = self.store.all_entities()
        wanted = request.query.strip().casefold()
        if wanted:
            entities = [e for e in entities if any(wanted in n.casefold() for n in e.names)]
        counts = self.store.fact_counts()
        rows = [_entity_row(e, counts.get(e.id, (0, 0))) for e in entities]
        rows.sort(key=lambda r: (-r.current - r.past, r.name.casefold()))
        start = (request.page - 1) * request.page_size
        return EntityPage(
            ref=request.ref,
            rows=rows[start : start + request.page_size],
            total=len(rows),
            page=request.page,
            page_size=request.page_size,
        )

    def entity(self, request: EntityOpen) -> EntityDetail:
        entity = self._require(request.id)
        triplets = self.store.triplets_about([entity.id])
        triplets.sort(key=lambda t: (not t.current, -t.valid_from.timestamp()))
        current = sum(t.current for t in triplets)
        return EntityDetail(
            ref=request.ref,
            entity=_entity_row(entity, (current, len(triplets) - current)),
            facts=self._fact_rows(triplets),
            changes=[change_row(c) for c in self.editor.changes([t.id for t in triplets])],
        )

    # Changing

    def change(self, request: FactChange) -> FactDone:
        before = self._triplet(request.id)
        if request.action == "retire":
            after = self.editor.retire(request.id)
            text = f"said the fact {quote(after.text)} no longer holds"
        elif request.action == "reinstate":
            after = self.editor.reinstate(request.id)
            text = f"said the fact {quote(after.text)} holds again"
        else:
            after = self.editor.correct(
                request.id, request.subject, request.relation, request.object
            )
            text = f"corrected the fact {quote(before.text)} to {quote(after.text)}"
        return FactDone(ref=request.ref, fact=self._fact_rows([after])[0], text=text)

    def undo(self, request: FactUndo) -> FactDone:
        restored = self.editor.undo(request.change_id)
        text = f"undid a change to a fact: now {quote(restored.describe())}"
        return FactDone(ref=request.ref, fact=self._fact_rows([restored])[0], text=text)

    def _fact_rows(self, triplets: list[Triplet]) -> list[FactRow]:
        episodes = sorted({i for t in triplets for i in t.episodes})
        memories = {r.id: r for r in self.stream.get_many(episodes, embeddings=False)}
        passages = {
            c.id: PassageRow(id=c.id, title=c.title, text=c.text, created_at=c.created_at)
            for c in self.archival.get_chunks(episodes)
        }
        replacements = {
            t.id: t.text
            for t in self.store.get_triplets(
                sorted({t.replaced_by for t in triplets if t.replaced_by})
            )
        }
        return [
            FactRow(
                id=t.id,
                subject=t.subject,
                subject_name=t.subject_name,
                relation=t.relation,
                object=t.object,
                object_name=t.object_name,
                hypothesis=t.hypothesis,
                valid_from=t.valid_from,
                valid_until=t.valid_until,
                replaced_by=replacements.get(t.replaced_by) if t.replaced_by else None,
                memories=[row_of(memories[i]) for i in t.episodes if i in memories],
                passages=[passages[i] for i in t.episodes if i in passages],
            )
            for t in triplets
        ]

    def _require(self, entity_id: str) -> Entity:
        entity = self.store.get_entity(entity_id)
        if entity is None:
            raise FactEditError(f"no entity with id {entity_id}")
        return entity

    def _triplet(self, triplet_id: str) -> Triplet:
        found = self.store.get_triplets([triplet_id])
        if not found:
            raise FactEditError(f"no fact with id {triplet_id}")
        return found[0]


def _entity_row(entity: Entity, counts: tuple[int, int]) -> EntityRow:
    return EntityRow(
        id=entity.id,
        name=entity.name,
        aliases=list(entity.aliases),
        current=counts[0],
        past=counts[1],
    )
