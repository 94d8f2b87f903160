"""The knowledge graph (AriGraph): facts learnt from the memory stream and from the documents
in archival storage, kept current.

``learn(records)`` reads memories (or document chunks) the graph has not read yet, in batches
(one LLM request per ``batch`` of them), and for each:

1. **extracts** its facts as triplets (:mod:`memory.graph.extract`);
2. **resolves** each subject and object to an entity: the same name or alias is the same
   entity; a name whose embedding is very close to an entity's is an alias of it; in the band
   below that, the LLM is asked whether the two name the same thing (with what is known about
   the entity), and a doubt makes a new entity;
3. **links** the memory to its triplets (an episodic vertex): a fact already known gets the
   memory as one more episode instead of a copy;
4. **replaces** outdated facts: the current facts about the entities the new ones are about
   are put to the LLM with the new ones, and those it names as outdated get ``valid_until`` (the
   new memory's time) and the id of the fact that replaced them. Nothing is deleted.

Nothing here runs on the reply path: the service calls ``learn`` in the background. A batch
whose extraction fails is left unread and tried again later; a failed replacement keeps both.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memory.archival import ArchivalChunk, ArchivalStore
from memory.embedder import Embedder
from memory.graph.extract import GRAPH_RULES, SAME, Extracted, extract, outdated
from memory.graph.store import Entity, GraphStore, Triplet
from memory.llm import Message, StructuredLLM
from memory.paging import Page
from memory.records import Kind, MemoryRecord
from memory.scoring import cosine
from memory.stream import Filters, MemoryStream
from memory.worker import BackgroundWorker

log = logging.getLogger(__name__)

# Cosine similarity of two names' MiniLM embeddings: at or above SAME_NAME they are one entity;
# from UNSURE_NAME up the LLM decides; below, two entities. Measured: a word and the same word
# with an article 0.92, or with a noun after it 0.89; two different cities 0.69 (not the
# same); "my sister" / "user's sister" 0.71; a first name and the same name with a surname
# 0.64 (the same, for the LLM to say).
SAME_NAME = 0.9
UNSURE_NAME = 0.6
# Memories per extraction request. With several, the bundled 1.5B model credited facts to the
# wrong memory; one at a time it credited them right. A larger endpoint can take more
# (KnowledgeGraph(batch=...)).
BATCH = 1
# The kinds of memory facts are learnt from (not plans, reflections or summaries, which are
# the assistant's own thoughts about what was said).
LEARNT_FROM: tuple[Kind, ...] = ("observation", "fact")
# Known facts put to the LLM beside a memory's new ones, when asking which are outdated.
REPLACEMENT_CANDIDATES = 12
# How near (cosine of MiniLM embeddings) a known fact's relation must be to a new fact's for the
# two to be about the same aspect. Measured: "lives in" / "moved to" about 0.6, a relation and
# itself 1.0 (replacements); relations about unrelated things 0.1-0.35 (no replacement). 0 turns
# the gate off.
SAME_ASPECT = 0.5
# The background learner reads memories a page of this many at a time, newest first.
RECENT = 200


@dataclass(frozen=True)
class Learnt:
    read: int  # memories read
    triplets: int  # new facts
    replaced: int  # facts that stopped holding
    llm_calls: int


SAME_ENTITY_SCHEMA = {
    "type": "object",
    "properties": {"same": {"type": "boolean"}},
    "required": ["same"],
    "additionalProperties": False,
}


# What the graph reads: a memory of the stream, or a chunk of a document in archival storage.
Readable = MemoryRecord | ArchivalChunk


@dataclass(frozen=True)
class Passage:
    """A memory or a document chunk, as the graph takes it in."""

    id: str  # the episode's id: the memory's or the chunk's
    text: str
    said_at: datetime  # when it was said, or the document stored
    happened_at: datetime  # when what it tells happened, as far as known


def passage(item: Readable) -> Passage:
    if isinstance(item, ArchivalChunk):
        return Passage(item.id, item.text, item.created_at, item.created_at)
    return Passage(item.id, item.text, item.created_at, item.event_time or item.created_at)


class KnowledgeGraph:
    def __init__(
        self,
        store: GraphStore,
        embedder: Embedder,
        llm: StructuredLLM,
        batch: int = BATCH,
        same_aspect: float = SAME_ASPECT,
    ) -> None:
        self.store = store
        self._embedder = embedder
        self._llm = llm
        self._batch = batch
        self._same_aspect = same_aspect
        self._calls = 0

    def unread(self, records: Sequence[Readable]) -> list[Readable]:
        """The memories (or chunks) among ``records`` the graph should learn from and has not
        read."""
        wanted = [r for r in records if isinstance(r, ArchivalChunk) or _learnt_from(r)]
        read = self.store.read_episodes([r.id for r in wanted])
        return [r for r in wanted if r.id not in read]

    def learn(self, records: Sequence[Readable], stop: threading.Event | None = None) -> Learnt:
        """Read the unread memories (or chunks) among ``records`` into the graph in the order
        they were stored, which is the order the user said them; a document's chunks in the
        order given (``stop`` set: no further batch is started, and a batch whose extraction
        was under way is left unread). A fact's time is its memory's event time when it has
        one ("I moved last week"), else when it was said or stored."""
        calls_before = self._calls
        todo = sorted((passage(r) for r in self.unread(records)), key=lambda p: p.said_at)
        read = new = replaced = 0
        for start in range(0, len(todo), self._batch):
            if stop is not None and stop.is_set():
                break
            batch = todo[start : start + self._batch]
            self._calls += 1
            found = extract(self._llm, [r.text for r in batch])
            if stop is not None and stop.is_set():
                # Closing: the replacement questions would hold it up; read these next time.
                break
            if found is None:
                log.warning("knowledge graph: %d memories left for later", len(batch))
                continue
            for index, record in enumerate(batch):
                added, retired = self._take_in(record, [t for t in found if t.memory == index])
                new += added
                replaced += retired
            read += len(batch)
        if read:
            self.store.compact()
        return Learnt(read, new, replaced, self._calls - calls_before)

    def _take_in(self, record: Passage, facts: Sequence[Extracted]) -> tuple[int, int]:
        """Store one memory's facts, linked to it; returns (new facts, replaced facts)."""
        at = record.happened_at
        new: list[Triplet] = []
        linked: list[str] = []
        for fact in facts:
            subject = self.resolve(_speaker(fact.subject, record.text))
            obj = self.resolve(_speaker(fact.object, record.text))
            same = self._same_fact(subject, fact.relation, obj)
            if same is not None:
                self.store.add_episode(same, record.id)
                linked.append(same.id)
                continue
            triplet = Triplet(
                id=uuid.uuid4().hex,
                subject=subject.id,
                relation=fact.relation,
                object=obj.id,
                subject_name=subject.name,
                object_name=obj.name,
                episodes=(record.id,),
                valid_from=at,
                hypothesis=fact.hypothesis,
            )
            key = (triplet.subject, triplet.relation, triplet.object)
            if key not in [(t.subject, t.relation, t.object) for t in new]:
                new.append(triplet)
                linked.append(triplet.id)
        vectors = self._embedder.embed([t.text for t in new]) if new else None
        retired = self._replace(new, vectors, record.said_at) if vectors is not None else 0
        self.store.add_triplets(new, vectors)
        self.store.add_episodes({record.id: linked})
        return len(new), retired

    def _same_fact(self, subject: Entity, relation: str, obj: Entity) -> Triplet | None:
        for known in self.store.triplets_about([subject.id], current_only=True):
            if (known.subject, known.relation, known.object) == (subject.id, relation, obj.id):
                return known
        return None

    def _replace(
        self, new: Sequence[Triplet], vectors: NDArray[np.float32], said_at: datetime
    ) -> int:
        """Ask which current facts about the new facts' subjects the new ones make outdated.
        Only known facts about the same aspect are asked about: those whose relation is near a
        new fact's (``same_aspect``), at most the REPLACEMENT_CANDIDATES nearest a new fact (a
        person the user talks about a lot has hundreds of facts). None left: no question."""
        if not new:
            return 0
        subjects = {t.subject for t in new}
        known = self.same_aspect(
            [
                t
                for t in self.store.triplets_about(sorted(subjects), current_only=True)
                if t.subject in subjects
            ],
            new,
        )
        if not known:
            return 0
        if len(known) > REPLACEMENT_CANDIDATES:
            known_vectors = self.store.triplet_vectors([t.id for t in known])
            nearness = np.max(
                np.stack([cosine(known_vectors[t.id], vectors) for t in known]), axis=1
            )
            nearest = np.argsort(-nearness, kind="stable")[:REPLACEMENT_CANDIDATES]
            known = [known[i] for i in sorted(nearest)]
        self._calls += 1
        pairs = outdated(self._llm, [t.describe() for t in known], [t.text for t in new])
        if not pairs:
            return 0
        retired = 0
        for known_index, new_index in pairs:
            old, replacement = known[known_index], new[new_index]
            if old.subject != replacement.subject:  # not the same thing: keep both
                continue
            if old.valid_from > said_at:  # a memory said before the fact began, read late
                continue
            # "Sold the boat last winter" may date the change before the old fact was last said.
            self.store.retire(old.id, max(replacement.valid_from, old.valid_from), replacement.id)
            retired += 1
        return retired

    def same_aspect(self, known: Sequence[Triplet], new: Sequence[Triplet]) -> list[Triplet]:
        """The known facts whose relation is near (cosine of the relations' embeddings at least
        SAME_ASPECT) a new fact's about the same subject: only those can describe the same
        aspect, as replacement needs. Without this gate the bundled 1.5B model retired most
        facts about a person whenever a new one came (docs/BENCHMARKS.md, "Knowledge graph")."""
        if not known or not new:
            return []
        if self._same_aspect <= 0:
            return list(known)
        relations = sorted({t.relation for t in (*known, *new)})
        embedded = self._embedder.embed(relations)
        unit = embedded / np.maximum(np.linalg.norm(embedded, axis=1, keepdims=True), 1e-12)
        place = {relation: index for index, relation in enumerate(relations)}
        kept = []
        for fact in known:
            nearness = [
                float(unit[place[fact.relation]] @ unit[place[t.relation]])
                for t in new
                if t.subject == fact.subject
            ]
            if nearness and max(nearness) >= self._same_aspect:
                kept.append(fact)
        return kept

    # Entities

    def resolve(self, name: str) -> Entity:
        """The entity ``name`` names, made if it is new (see the module's step 2)."""
        entities, vectors = self.store.all_entities()
        wanted = _plain(name)
        for entity in entities:
            if wanted in (_plain(n) for n in entity.names):
                return entity
        vector = self._embedder.embed([name])[0]
        if entities:
            similarity = cosine(vector, vectors)
            best = int(np.argmax(similarity))
            closest = entities[best]
            if similarity[best] >= SAME_NAME or (
                similarity[best] >= UNSURE_NAME and self._same_entity(name, closest)
            ):
                return self.store.add_alias(closest, name)
        return self.store.add_entity(name, vector)

    def _same_entity(self, name: str, entity: Entity) -> bool:
        known = [t.describe() for t in self.store.triplets_about([entity.id], current_only=True)]
        facts = "\n".join(f"- {line}" for line in known[:10]) or "- nothing yet"
        messages: list[Message] = [
            {"role": "system", "content": GRAPH_RULES},
            {
                "role": "user",
                "content": f'{SAME}\nKnown: "{entity.name}" (also called: '
                f"{', '.join(entity.aliases) or 'nothing else'}). What is known about it:\n"
                f'{facts}\n\nNew name: "{name}". The same thing?',
            },
        ]
        self._calls += 1
        try:
            reply = self._llm.complete_json(messages, SAME_ENTITY_SCHEMA, max_tokens=20)
        except Exception as error:  # no answer: a doubt, so two entities
            log.warning("knowledge graph: no answer on %r: %s", name, error)
            return False
        return isinstance(reply, dict) and reply.get("same") is True


# Words by which the speaker of a memory names themself; the extraction is asked to write
# "user" or "assistant", and small models often write "I" all the same.
FIRST_PERSON = ("i", "me", "myself")
SPEAKERS = {"User:": "user", "Assistant:": "assistant"}


def _speaker(name: str, text: str) -> str:
    """``name``, or the speaker's name when it is "I" in a memory that says who speaks."""
    if name.casefold() not in FIRST_PERSON:
        return name
    return next((who for prefix, who in SPEAKERS.items() if text.startswith(prefix)), name)


def _plain(name: str) -> str:
    """A name compared as the same: case and a leading article do not count."""
    words = name.casefold().split()
    if len(words) > 1 and words[0] in ("the", "a", "an"):
        words = words[1:]
    return " ".join(words)


def _learnt_from(record: MemoryRecord) -> bool:
    return record.kind in LEARNT_FROM and not record.deleted


class GraphLearner(BackgroundWorker):
    """Learns what the graph has not read, in the background: when poked (after a turn) and
    every ``interval_s``. Memories come first: a pass reads the newest RECENT memories; when
    those are all read and the graph has read fewer memories than there are (an import, a
    backlog from when the LLM was away), it walks back a page at a time to the newest unread
    ones. Only when every memory is read does it turn to the documents in archival storage, in
    the same way. One page is learnt per pass, so a backlog never holds a pass for long, and a
    long document never holds up what the user says next."""

    def __init__(
        self,
        graph: KnowledgeGraph,
        stream: MemoryStream,
        archival: ArchivalStore | None = None,
        interval_s: float = 300.0,
    ) -> None:
        super().__init__("knowledge-graph", interval_s)
        self._graph = graph
        self._stream = stream
        self._archival = archival
        self.start()

    def work(self, stop: threading.Event) -> None:
        wanted = Filters(kinds=LEARNT_FROM)

        def memories(page: int) -> Page[MemoryRecord]:
            return self._stream.list_memories(wanted, page=page, page_size=RECENT)

        if self._learn_a_page(memories, documents=False, stop=stop):
            return
        archival = self._archival
        if archival is not None and not stop.is_set():
            self._learn_a_page(
                lambda page: archival.list_chunks(page, RECENT), documents=True, stop=stop
            )

    def _learn_a_page(
        self, listing: Callable[[int], Page[Any]], documents: bool, stop: threading.Event
    ) -> bool:
        """Learn the newest page with something unread; whether there was one."""
        page = 1
        while not stop.is_set():
            listed = listing(page)
            if self._graph.unread(listed.items):
                learnt = self._graph.learn(listed.items, stop)
                log.info("knowledge graph: %s", learnt)
                return True
            older_unread = self._graph.store.read_count(documents) < listed.total
            if not older_unread or page * RECENT >= listed.total:
                return False
            page += 1
        return False
