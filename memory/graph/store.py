"""The knowledge graph's tables in LanceDB, beside the memory stream.

- ``graph_entities``: the semantic vertices (a person, a place, a thing), each with the names it
  has been called by (aliases) and the embedding of its name.
- ``graph_triplets``: the semantic edges (subject, relation, object), each with the memories it
  was learnt from (its episodes), when it started to hold and, once a later fact replaced it,
  when it stopped (``valid_until``) and which triplet replaced it. Nothing is deleted: a
  replaced fact answers questions about the past.
- ``graph_episodes``: the episodic vertices, one per memory the extraction has read, with the
  triplets it gave (none is a valid answer: that memory is not read again).
- ``graph_history``: the user's corrections of facts, kept so they can be listed and undone
  (the memory stream's history, for triplets: :mod:`memory.graph.edit`).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from memory.embedder import Embedder
from memory.feed import ChangeFeed
from memory.history import HISTORY_SCHEMA, History
from memory.locking import WriteLock
from memory.records import TIMESTAMP, _aware, utc_now
from memory.table import Table, in_list, quote, timestamp_literal


@dataclass(frozen=True)
class Entity:
    id: str
    name: str
    aliases: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


@dataclass(frozen=True)
class Triplet:
    id: str
    subject: str  # entity id
    relation: str
    object: str  # entity id
    subject_name: str
    object_name: str
    episodes: tuple[str, ...]
    valid_from: datetime
    hypothesis: bool = False
    valid_until: datetime | None = None
    replaced_by: str | None = None

    @property
    def text(self) -> str:
        return f"{self.subject_name} {self.relation} {self.object_name}"

    @property
    def current(self) -> bool:
        return self.valid_until is None

    def describe(self) -> str:
        """One line for a prompt or a screen: the fact, and whether it still holds."""
        maybe = " (maybe)" if self.hypothesis else ""
        if self.valid_until is None:
            return f"{self.text}{maybe}"
        return (
            f"{self.text}{maybe} (until {self.valid_until.date().isoformat()}, "
            f"since {self.valid_from.date().isoformat()})"
        )


def entities_schema(dimensions: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("name", pa.string(), nullable=False),
            pa.field("aliases", pa.list_(pa.string())),
            pa.field("created_at", TIMESTAMP, nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dimensions)),
        ]
    )


def triplets_schema(dimensions: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("subject", pa.string(), nullable=False),
            pa.field("relation", pa.string(), nullable=False),
            pa.field("object", pa.string(), nullable=False),
            pa.field("subject_name", pa.string(), nullable=False),
            pa.field("object_name", pa.string(), nullable=False),
            pa.field("text", pa.string(), nullable=False),
            pa.field("hypothesis", pa.bool_(), nullable=False),
            pa.field("episodes", pa.list_(pa.string())),
            pa.field("valid_from", TIMESTAMP, nullable=False),
            pa.field("valid_until", TIMESTAMP),
            pa.field("replaced_by", pa.string()),
            pa.field("created_at", TIMESTAMP, nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dimensions)),
        ]
    )


EPISODES_SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("triplets", pa.list_(pa.string())),
        pa.field("extracted_at", TIMESTAMP, nullable=False),
    ]
)
TRIPLET_COLUMNS = [name for name in triplets_schema(1).names if name != "vector"]


class GraphStore:
    def __init__(self, database: Any, lock: WriteLock, embedder: Embedder) -> None:
        self.embedder = embedder
        # Told, after each write, the memories whose facts changed (none: only the entities).
        self.feed = ChangeFeed()
        self._dimensions = dimensions = embedder.dimensions
        self.entities = Table(
            database, "graph_entities", entities_schema(dimensions), lock, text_column="name"
        )
        self.triplets = Table(database, "graph_triplets", triplets_schema(dimensions), lock)
        self._entities: tuple[list[Entity], NDArray[np.float32]] | None = None
        self.episodes = Table(
            database, "graph_episodes", EPISODES_SCHEMA, lock, None, vector_column=None
        )
        self.history = History(
            Table(database, "graph_history", HISTORY_SCHEMA, lock, None, vector_column=None)
        )

    def compact(self) -> None:
        """Fold the small files that many little writes leave into whole ones, and index new
        rows: learning 94 turns left graph searches at ~400 ms, after this ~100 ms."""
        for table in (self.entities, self.triplets, self.episodes):
            table.ensure_indices()

    # Entities

    def all_entities(self) -> tuple[list[Entity], NDArray[np.float32]]:
        """Every entity and the embeddings of their names (one row each, in the same order).
        Read once and kept: every name of every fact learnt is resolved against it, and only
        this store writes the table (``add_entity`` and ``add_alias`` drop the copy)."""
        if self._entities is None:
            rows = self.entities.query(columns=["id", "name", "aliases", "vector"]).to_pylist()
            vectors = np.array([row["vector"] for row in rows], dtype=np.float32)
            self._entities = (
                [_entity(row) for row in rows],
                vectors.reshape(len(rows), self._dimensions),
            )
        return self._entities

    def add_entity(self, name: str, vector: NDArray[np.float32] | None = None) -> Entity:
        if vector is None:
            vector = self.embedder.embed([name])[0]
        entity = Entity(id=uuid.uuid4().hex, name=name)
        self._entities = None
        self.entities.add(
            [
                {
                    "id": entity.id,
                    "name": name,
                    "aliases": [],
                    "created_at": utc_now(),
                    "vector": vector.astype(np.float32).tolist(),
                }
            ]
        )
        self.feed.tell([])
        return entity

    def get_entity(self, entity_id: str) -> Entity | None:
        entities, _ = self.all_entities()
        return next((e for e in entities if e.id == entity_id), None)

    def entity_named(self, name: str) -> Entity | None:
        """The entity called ``name`` (or by it as an alias), case aside."""
        wanted = name.casefold().strip()
        entities, _ = self.all_entities()
        return next((e for e in entities if wanted in (n.casefold() for n in e.names)), None)

    def fact_counts(self) -> dict[str, tuple[int, int]]:
        """Per entity id: (current facts, past facts) it is the subject or object of."""
        table = self.triplets.query(columns=["subject", "object", "valid_until"])
        counts: dict[str, list[int]] = {}
        for row in table.to_pylist():
            slot = 0 if row["valid_until"] is None else 1
            for entity_id in {row["subject"], row["object"]}:
                counts.setdefault(entity_id, [0, 0])[slot] += 1
        return {entity_id: (c[0], c[1]) for entity_id, c in counts.items()}

    def add_alias(self, entity: Entity, alias: str) -> Entity:
        if alias in entity.names:
            return entity
        merged = Entity(entity.id, entity.name, (*entity.aliases, alias))
        self._entities = None
        self.entities.update(f"id = {quote(entity.id)}", {"aliases": list(merged.aliases)})
        self.feed.tell([])
        return merged

    # Triplets

    def add_triplets(
        self, triplets: Sequence[Triplet], vectors: NDArray[np.float32] | None = None
    ) -> None:
        """Store new triplets; ``vectors``: the embeddings of their texts, when already made."""
        if not triplets:
            return
        if vectors is None:
            vectors = self.embedder.embed([t.text for t in triplets])
        now = utc_now()
        self.triplets.add(
            [
                {
                    "id": t.id,
                    "subject": t.subject,
                    "relation": t.relation,
                    "object": t.object,
                    "subject_name": t.subject_name,
                    "object_name": t.object_name,
                    "text": t.text,
                    "hypothesis": t.hypothesis,
                    "episodes": list(t.episodes),
                    "valid_from": t.valid_from,
                    "valid_until": t.valid_until,
                    "replaced_by": t.replaced_by,
                    "created_at": now,
                    "vector": vector.astype(np.float32).tolist(),
                }
                for t, vector in zip(triplets, vectors, strict=True)
            ]
        )
        self.feed.tell(record_id for t in triplets for record_id in t.episodes)

    def add_episode(self, triplet: Triplet, record_id: str) -> None:
        """One more memory supports a fact already known."""
        if record_id not in triplet.episodes:
            episodes = [*triplet.episodes, record_id]
            self.triplets.update(f"id = {quote(triplet.id)}", {"episodes": episodes})
            self.feed.tell([record_id])

    def update_triplet(self, triplet: Triplet, re_embed: bool) -> None:
        """Write a changed triplet over the stored one (``re_embed``: its text changed)."""
        values: dict[str, Any] = {
            "subject": triplet.subject,
            "relation": triplet.relation,
            "object": triplet.object,
            "subject_name": triplet.subject_name,
            "object_name": triplet.object_name,
            "text": triplet.text,
            "valid_until": triplet.valid_until,
            "replaced_by": triplet.replaced_by,
        }
        if re_embed:
            values["vector"] = self.embedder.embed([triplet.text])[0].astype(np.float32).tolist()
        self.triplets.update(f"id = {quote(triplet.id)}", values)
        self.feed.tell(triplet.episodes)

    def retire(self, triplet_id: str, at: datetime, replaced_by: str | None) -> None:
        """The fact stopped holding at ``at`` (it is kept, for questions about the past)."""
        self.triplets.update(
            f"id = {quote(triplet_id)}", {"valid_until": at, "replaced_by": replaced_by}
        )
        self.feed.tell([])

    def triplets_about(
        self, entity_ids: Sequence[str], current_only: bool = False
    ) -> list[Triplet]:
        """The triplets incident to any of ``entity_ids`` (as subject or object)."""
        if not entity_ids:
            return []
        where = f"({in_list('subject', entity_ids)} OR {in_list('object', entity_ids)})"
        if current_only:
            where += " AND valid_until IS NULL"
        return [_triplet(row) for row in self.triplets.query(where, TRIPLET_COLUMNS).to_pylist()]

    def triplets_of_memories(self, record_ids: Sequence[str]) -> list[Triplet]:
        """The triplets any of ``record_ids`` is an episode of (learnt from it, or told
        again by it)."""
        if not record_ids:
            return []
        where = f"array_has_any(episodes, [{', '.join(quote(i) for i in record_ids)}])"
        return [_triplet(row) for row in self.triplets.query(where, TRIPLET_COLUMNS).to_pylist()]

    def get_triplets(self, triplet_ids: Sequence[str]) -> list[Triplet]:
        if not triplet_ids:
            return []
        rows = self.triplets.query(in_list("id", triplet_ids), TRIPLET_COLUMNS).to_pylist()
        by_id = {row["id"]: _triplet(row) for row in rows}
        return [by_id[i] for i in triplet_ids if i in by_id]

    def nearest_triplets(self, vector: NDArray[np.float32], limit: int) -> list[Triplet]:
        if not self.triplets.count():
            return []
        found = self.triplets.vector_search(vector.tolist(), limit, None, TRIPLET_COLUMNS)
        return [_triplet(row) for row in found.to_pylist()]

    def triplet_vectors(self, triplet_ids: Sequence[str]) -> dict[str, NDArray[np.float32]]:
        if not triplet_ids:
            return {}
        rows = self.triplets.query(in_list("id", triplet_ids), ["id", "vector"]).to_pylist()
        return {row["id"]: np.asarray(row["vector"], dtype=np.float32) for row in rows}

    # Episodes

    def add_episodes(self, extracted: dict[str, list[str]]) -> None:
        """Mark memories as read, each with the triplets it gave."""
        if extracted:
            now = utc_now()
            self.episodes.upsert(
                [
                    {"id": record_id, "triplets": ids, "extracted_at": now}
                    for record_id, ids in extracted.items()
                ]
            )
            self.feed.tell(extracted)

    def read_episodes(self, record_ids: Sequence[str]) -> set[str]:
        """Which of ``record_ids`` the extraction has already read."""
        if not record_ids:
            return set()
        rows = self.episodes.query(in_list("id", record_ids), ["id"]).to_pylist()
        return {row["id"] for row in rows}

    def triplets_from(self, record_ids: Sequence[str]) -> dict[str, list[str]]:
        """The triplets each of ``record_ids`` gave, for those the extraction has read."""
        if not record_ids:
            return {}
        rows = self.episodes.query(in_list("id", record_ids), ["id", "triplets"]).to_pylist()
        return {row["id"]: list(row["triplets"] or ()) for row in rows}

    def retired_since(self, moment: datetime) -> list[Triplet]:
        """The facts that stopped holding at or after ``moment`` (replaced or ended)."""
        where = f"valid_until >= {timestamp_literal(moment)}"
        return [_triplet(row) for row in self.triplets.query(where, TRIPLET_COLUMNS).to_pylist()]

    def read_count(self, documents: bool = False) -> int:
        """How many memories the graph has read, or with ``documents`` how many document
        chunks (whose ids, "<document>:<index>", are the ones holding a colon)."""
        chunks = "id LIKE '%:%'"
        return self.episodes.count(chunks if documents else f"NOT ({chunks})")

    def episode_sizes(self, record_ids: Sequence[str]) -> dict[str, int]:
        """How many triplets each memory gave (N in the episode score)."""
        if not record_ids:
            return {}
        rows = self.episodes.query(in_list("id", record_ids), ["id", "triplets"]).to_pylist()
        return {row["id"]: len(row["triplets"] or []) for row in rows}


def _entity(row: dict[str, Any]) -> Entity:
    return Entity(id=row["id"], name=row["name"], aliases=tuple(row["aliases"] or ()))


def _triplet(row: dict[str, Any]) -> Triplet:
    return Triplet(
        id=row["id"],
        subject=row["subject"],
        relation=row["relation"],
        object=row["object"],
        subject_name=row["subject_name"],
        object_name=row["object_name"],
        episodes=tuple(row["episodes"] or ()),
        valid_from=_aware(row["valid_from"]),
        hypothesis=bool(row["hypothesis"]),
        valid_until=_aware(row["valid_until"]) if row["valid_until"] is not None else None,
        replaced_by=row["replaced_by"],
    )
