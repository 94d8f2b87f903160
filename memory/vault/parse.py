"""A note read back: its front matter (as Obsidian may have rewritten it: any YAML), the text
the user wrote, and the links the service put below it; or why it cannot be read."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import yaml

from memory.text import storable_text
from memory.vault.notes import ENTITIES_HEADING, EVIDENCE_HEADING

TRAILER_HEADINGS = (EVIDENCE_HEADING, ENTITIES_HEADING)
FENCE = "---"


class NoteError(ValueError):
    """A note that cannot be read as a memory; the message says why, in a few words."""


@dataclass(frozen=True)
class NoteView:
    """What a note says. ``front``: its front matter, dates as ISO text, so that notes that
    say the same compare equal however the YAML was written; ``links``: the lines below the
    text (the service's links, not read back as the memory's)."""

    front: dict[str, Any]
    text: str
    links: tuple[str, ...]

    @property
    def id(self) -> str | None:
        value = self.front.get("id")
        return value if isinstance(value, str) and value else None

    @property
    def importance(self) -> int | None:
        """None where the note has none (left as it is)."""
        value = self.front.get("importance")
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10:
            raise NoteError(f"importance must be a whole number 1-10, not {value!r}")
        return value

    @property
    def pinned(self) -> bool | None:
        value = self.front.get("pinned")
        if value is not None and not isinstance(value, bool):
            raise NoteError(f"pinned must be true or false, not {value!r}")
        return value


def parse_note(data: bytes) -> NoteView:
    """The note in ``data``; raises NoteError when it is binary, not UTF-8, or its front
    matter is not a YAML mapping. The values of importance and pinned are checked too."""
    if b"\x00" in data:
        raise NoteError("a binary file, not a note")
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError:
        raise NoteError("not UTF-8 text") from None
    lines = content.replace("\r\n", "\n").removeprefix("\ufeff").split("\n")
    front: dict[str, Any] = {}
    if lines and lines[0].rstrip() == FENCE:
        end = next((i for i, line in enumerate(lines[1:], 1) if line.rstrip() == FENCE), None)
        if end is None:
            raise NoteError("its front matter has no closing '---'")
        front = _front_matter("\n".join(lines[1:end]))
        lines = lines[end + 1 :]
    cut = _trailer_start(lines)
    view = NoteView(
        front=front,
        text=storable_text("\n".join(lines[:cut])),
        links=tuple(line.strip() for line in lines[cut:] if line.strip()),
    )
    _ = view.importance, view.pinned  # checked now, so a bad value is reported at once
    return view


def _front_matter(text: str) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as error:
        problem = getattr(error, "problem", None) or "not YAML"
        raise NoteError(f"broken front matter ({problem})") from None
    if not isinstance(loaded, dict):
        raise NoteError("broken front matter (not a list of properties)")
    return {str(key): _plain(value) for key, value in loaded.items()}


def _plain(value: object) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _trailer_start(lines: list[str]) -> int:
    """Where the service's links start: the first of its headings below which there are only
    its headings, list items and blank lines (a heading in the user's own text stays text)."""
    start = len(lines)
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index].strip()
        if line in TRAILER_HEADINGS:
            start = index
        elif line and not line.startswith("- "):
            break
    return start
