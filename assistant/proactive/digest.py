"""The digest a heartbeat hands the agent: what changed since it last looked, one line per
thing, each marked whether it may call for a word to the user (``actionable``: an intention
come due, a clash, something coming up, an event passed to ask about, a task's unreported
end) or is only for the agent to know (a new memory, a link between memories)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

ItemKind = Literal[
    "memory",
    "link",
    "changed",
    "intention",
    "reminder",
    "task",
    "waiting",
    "plan",
    "clash",
    "upcoming",
    "passed",
]
# How each kind reads in the digest: what it is, and for what may need the user, what a
# person would do about it (without the hint the 0.5B model said a clash's first event back,
# "I have the dentist on Thursday at 3 pm.", and copied an intention's due time into it).
LABELS: dict[ItemKind, str] = {
    "memory": "new memory",
    "link": "connected",
    "changed": "fact changed",
    "intention": "your intention, due now: do it",
    "reminder": "reminder within the hour, it fires by itself",
    "task": "your background task ended, the user not told yet: tell them its result",
    "waiting": "background task waiting for the user",
    "plan": "plan starting",
    "clash": "clash, tell the user these overlap",
    "upcoming": "coming up, remind the user",
    "passed": "just happened, ask the user how it went",
}
LINE_CHARS = 240


@dataclass(frozen=True)
class Item:
    # The same thing keeps the same key across ticks and restarts ("intention:i-1a2b3c",
    # "clash:<id>:<id>"), so it is given once and spoken of once.
    key: str
    kind: ItemKind
    text: str
    actionable: bool = False

    def line(self) -> str:
        text = " ".join(self.text.split())
        if len(text) > LINE_CHARS:
            text = text[: LINE_CHARS - 1] + "…"
        return f"({LABELS[self.kind]}) {text}"


@dataclass(frozen=True)
class Digest:
    at: datetime
    items: tuple[Item, ...] = field(default_factory=tuple)

    @property
    def empty(self) -> bool:
        return not self.items

    @property
    def actionable(self) -> tuple[Item, ...]:
        return tuple(item for item in self.items if item.actionable)

    def lines(self) -> list[str]:
        """The items numbered, the actionable ones first."""
        ordered = [*self.actionable, *(i for i in self.items if not i.actionable)]
        return [f"{number}. {item.line()}" for number, item in enumerate(ordered, 1)]
