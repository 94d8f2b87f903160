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
# How each kind reads in the digest.
LABELS: dict[ItemKind, str] = {
    "memory": "new memory",
    "link": "connected",
    "changed": "fact changed",
    "intention": "your intention, due now",
    "reminder": "reminder within the hour, it fires by itself",
    "task": "your background task ended, the user not told yet",
    "waiting": "background task waiting for the user",
    "plan": "their plan starting",
    "clash": "clash",
    "upcoming": "coming up",
    "passed": "just happened",
}
# What a person would say about what may need the user, and an example of the words (about
# something else, so it is not copied). Told only "tell the user what item 1 calls for", the
# 1.5B model read the digest's line back ("The user said '...' and the user said '...'") and
# answered a due intention with "I don't know how Pedro's surgery went".
TELL: dict[ItemKind, tuple[str, str]] = {
    "intention": (
        "do now what you meant to",
        'for "Ask how the move went": "How did the move go?"',
    ),
    "task": (
        "tell them what your background task came to",
        '"I looked up the trains: the 8:15 gets you to Porto by 11."',
    ),
    "clash": (
        "two of their plans are at the same time",
        '"Heads-up: your haircut and the team lunch are both on Friday at noon. Want to move one?"',
    ),
    "upcoming": ("remind them it is coming up", '"Don\'t forget the book club tonight at 7!"'),
    "passed": ("ask them how it went", '"How did the football final go?"'),
    "plan": ("their own plan starts", '"Your yoga class starts in five minutes."'),
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

    def tell(self) -> str:
        """What to tell the user about the first item that may need them ("" if none)."""
        if not self.actionable:
            return ""
        item = self.actionable[0]
        what, example = TELL.get(item.kind, ("tell them about it", '"..."'))
        return f"{what}: {item.text}. Say it to them in your own words, e.g. {example}"

    def asks(self) -> bool:
        """What to tell the user is a question: how an event went, or an intention to ask."""
        if not self.actionable:
            return False
        item = self.actionable[0]
        return item.kind == "passed" or (
            item.kind == "intention" and item.text.lower().startswith("ask")
        )

    def lines(self) -> list[str]:
        """The items numbered, the actionable ones first."""
        ordered = [*self.actionable, *(i for i in self.items if not i.actionable)]
        return [f"{number}. {item.line()}" for number, item in enumerate(ordered, 1)]
