"""The user's corrections of the knowledge graph, with the same history and undo as memories.

- **correct** a fact the extraction got wrong: its subject, relation or object is rewritten in
  place (a name is matched to the entity of that name or alias, else becomes a new entity; no
  LLM is asked). The fact never held as it was written, so no past version is kept in the
  graph; the history keeps it, for undo.
- **retire** a fact that stopped holding: it gets ``valid_until`` now, as a replacement would
  give it, and stays for questions about the past.
- **reinstate** a past fact (retired by mistake, or replaced by a wrong replacement): it holds
  again.

Every change is a row of ``graph_history`` (before and after), and ``undo`` reverts one.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from memory.graph.store import Entity, GraphStore, Triplet
from memory.history import Action, Change, new_change
from memory.records import Clock, _aware, utc_now

NAME_CHARS = 60
RELATION_CHARS = 40


class FactEditError(Exception):
    """A change that cannot be made (unknown fact, empty name, nothing to undo)."""


class FactEditor:
    def __init__(self, store: GraphStore, clock: Clock = utc_now) -> None:
        self.store = store
        self._clock = clock

    def correct(
        self,
        triplet_id: str,
        subject: str | None = None,
        relation: str | None = None,
        obj: str | None = None,
    ) -> Triplet:
        """Rewrite the fact; each part left None stays as it is."""
        before = self._require(triplet_id)
        after = before
        if subject is not None:
            entity = self._entity(subject, "subject")
            after = replace(after, subject=entity.id, subject_name=entity.name)
        if relation is not None:
            words = " ".join(relation.split()).lower()
            if not words or len(words) > RELATION_CHARS:
                raise FactEditError(f"a relation is 1 to {RELATION_CHARS} characters")
            after = replace(after, relation=words)
        if obj is not None:
            entity = self._entity(obj, "object")
            after = replace(after, object=entity.id, object_name=entity.name)
        if after.subject == after.object:
            raise FactEditError("a fact links two different things")
        if after == before:
            raise FactEditError("nothing changed")
        return self._write(before, after, "edit")

    def retire(self, triplet_id: str) -> Triplet:
        before = self._require(triplet_id)
        if not before.current:
            raise FactEditError("that fact is already in the past")
        return self._write(before, replace(before, valid_until=self._clock()), "retire")

    def reinstate(self, triplet_id: str) -> Triplet:
        before = self._require(triplet_id)
        if before.current:
            raise FactEditError("that fact holds already")
        after = replace(before, valid_until=None, replaced_by=None)
        return self._write(before, after, "restore")

    def changes(self, triplet_ids: list[str]) -> list[Change]:
        """The changes to these facts, newest first."""
        return list(self.store.history.list_for(triplet_ids))

    def undo(self, change_id: str) -> Triplet:
        """Put the fact back as it was before the change; the undo is itself a change."""
        change = self.store.history.get(change_id)
        if change is None:
            raise FactEditError(f"no change {change_id}")
        if change.undone:
            raise FactEditError("that change was already undone")
        if change.action == "undo":
            raise FactEditError("an undo cannot be undone; make the change again")
        current = self._require(change.record_id)
        restored = replace(current, **_revived(change.before))
        self._write(current, restored, "undo")
        self.store.history.mark_undone(change.id)
        return restored

    def _write(self, before: Triplet, after: Triplet, action: Action) -> Triplet:
        self.store.update_triplet(after, re_embed=after.text != before.text)
        self.store.history.record(
            [new_change(after.id, action, _fields(before), _fields(after), self._clock())]
        )
        return after

    def _entity(self, name: str, part: str) -> Entity:
        clean = " ".join(name.split())
        if not clean or len(clean) > NAME_CHARS:
            raise FactEditError(f"the {part} is 1 to {NAME_CHARS} characters")
        return self.store.entity_named(clean) or self.store.add_entity(clean)

    def _require(self, triplet_id: str) -> Triplet:
        found = self.store.get_triplets([triplet_id])
        if not found:
            raise FactEditError(f"no fact with id {triplet_id}")
        return found[0]


EDITED = ("subject", "subject_name", "relation", "object", "object_name", "valid_until")


def _fields(triplet: Triplet) -> dict[str, Any]:
    values: dict[str, Any] = {name: getattr(triplet, name) for name in EDITED}
    values["replaced_by"] = triplet.replaced_by
    values["valid_until"] = triplet.valid_until.isoformat() if triplet.valid_until else None
    return values


def _revived(values: dict[str, Any]) -> dict[str, Any]:
    revived = dict(values)
    until = revived.get("valid_until")
    revived["valid_until"] = _aware(datetime.fromisoformat(until)) if until else None
    return revived
