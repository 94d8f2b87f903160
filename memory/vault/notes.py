"""A memory as a Markdown note: its fields as YAML front matter (each value written as JSON,
which YAML reads as it is), its text, then links: the notes it cites (a reflection's evidence)
and the knowledge graph's entities its facts are about. Shared by the one-shot export and the
live vault, so both write the same notes."""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import fields
from datetime import datetime
from itertools import chain, count

from memory.records import MemoryRecord

SLUG_WORDS = 6
SLUG_CHARS = 40
EVIDENCE_HEADING = "## Evidence"
ENTITIES_HEADING = "## Entities"
# The front matter of every field but the text and the embedding (what the export keeps).
ALL_KEYS = tuple(f.name for f in fields(MemoryRecord) if f.name not in ("text", "embedding"))


def json_value(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, tuple):
        return list(value)
    return value


def render_note(
    record: MemoryRecord,
    names: Mapping[str, str],
    keys: Sequence[str] = ALL_KEYS,
    entities: Sequence[str] = (),
) -> str:
    """The note of ``record``: ``names`` holds the note name of each memory it may cite (by
    id), ``keys`` the fields written as front matter, ``entities`` the entity notes it links."""
    lines = ["---", *_front_matter(record, names, keys), "---", "", record.text, ""]
    if record.evidence:
        lines += [EVIDENCE_HEADING, "", *(_evidence_line(c, names) for c in record.evidence), ""]
    if entities:
        lines += [ENTITIES_HEADING, "", *(f"- [[{name}]]" for name in entities), ""]
    return "\n".join(lines)


def _front_matter(record: MemoryRecord, names: Mapping[str, str], keys: Sequence[str]) -> list[str]:
    values = {key: json_value(getattr(record, key)) for key in keys}
    if "evidence" in values:
        values["evidence"] = [names.get(cited, cited) for cited in record.evidence]
    return [f"{key}: {json.dumps(value)}" for key, value in values.items()]


def _evidence_line(cited: str, names: Mapping[str, str]) -> str:
    name = names.get(cited)
    return f"- [[{name}]]" if name else f"- {cited} (not in the memory)"


def note_name(record_id: str, created_at: datetime, text: str, taken: set[str]) -> str:
    """A name no note in ``taken`` has: '<created date> <first words> <short id>' (the
    whole id where the short one is taken, then numbered)."""
    base = f"{created_at.date().isoformat()} {_slug(text)}"
    safe_id = re.sub(r"[^a-z0-9]", "", record_id.lower())[:64] or "x"
    candidates = chain(
        (f"{base} {safe_id[:8]}", f"{base} {safe_id}"),
        (f"{base} {safe_id}-{number}" for number in count(2)),
    )
    return next(name for name in candidates if name not in taken)


def _slug(text: str) -> str:
    """The first words of the text in lower-case ASCII letters and digits, joined by '-'."""
    plain = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    words = re.findall(r"[a-z0-9]+", plain.lower())[:SLUG_WORDS]
    return "-".join(words)[:SLUG_CHARS].strip("-") or "memory"
