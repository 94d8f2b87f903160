"""The digest a heartbeat hands the agent: what changed since it last looked, one line per
thing, each marked whether it may call for a word to the user (``actionable``: an intention
come due, a clash, something coming up, an event passed to ask about, a task's unreported
end) or is only for the agent to know (a new memory, a link between memories)."""

from __future__ import annotations

from collections.abc import Sequence
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
    "plan": "plan starting",
    "clash": "clash",
    "upcoming": "coming up",
    "passed": "just happened",
}
# What a person would say about what may need the user. Told only "tell the user what item 1
# calls for", the 1.5B model read the digest's line back ("The user said '...' and the user said
# '...'") and answered a due intention to ask after someone's event by saying it did not know how
# the event went; given an example of the words, it said the example (a reminder of the
# example's event in place of the item's own) in 6 of 16 (docs/BENCHMARKS.md, "Speaking first").
TELL: dict[ItemKind, str] = {
    "intention": "do now what you meant to",
    "task": "tell them what your background task came to",
    "clash": "two of their plans are at the same time",
    "upcoming": "remind them it is coming up",
    "passed": "ask them how it went",
    "plan": "their own plan starts",
}
# How the message opens, held by the grammar: the words show what kind of message it is, and
# what follows is about the item (no example to copy).
_END = r'[^"]*[^",:; \t\n\r]$'
# One question of one sentence: asked for a due intention to ask how someone's event went, the
# 1.5B model wrote that it had asked, answered for the user ("It went well, ...") and then asked
# "How about you?".
_ASKING = "How What Did Have Has Is Are Was Were Do Does Any When Where Who Which Could Would"
# The word, then a space: held to a bare prefix, the model fused "Is" and the next word
# ("Isent ...?").
QUESTION = "^(" + "|".join(_ASKING.split()) + r') [^"?.!]*\?$'
OPENINGS: dict[ItemKind, str] = {
    "passed": r'^How (did|was) [^"?.!]*\?$',
    "task": r"^I've finished " + _END,
    "clash": r"^Heads-up: " + _END,
    "upcoming": r"^Just a reminder: " + _END,
    "plan": r"^Just a reminder: " + _END,
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
    # What the user is told of it, in words to say to them ("your nephew's regatta is on
    # Thursday at 4 pm"); the text when empty. Given the user's words as said ("My nephew's
    # regatta ... (today at 16:00)"), the 1.5B model said them back so.
    told: str = ""

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
        """What may need the user, what code found first (a task's result, a clash, an event
        coming up or just passed) and the agent's own intentions last: the 1.5B model's
        intentions often restate what code finds (an event coming up, as a thing to check)."""
        found = [item for item in self.items if item.actionable]
        return tuple(sorted(found, key=lambda item: item.kind == "intention"))

    def without(self, items: Sequence[Item]) -> Digest:
        keys = {item.key for item in items}
        return Digest(self.at, tuple(i for i in self.items if i.key not in keys))

    def tell(self) -> str:
        """What to tell the user about the first item that may need them ("" if none)."""
        if not self.actionable:
            return ""
        item = self.actionable[0]
        if item.kind == "intention" and _asks(item.text):
            # "Ask how Radomir's regatta went": "ask them how Radomir's regatta went".
            return f"ask them {item.text.split(maxsplit=1)[1]}"
        return f"{TELL.get(item.kind, 'tell them about it')}: {item.told or item.text}"

    def opening(self) -> str | None:
        """The pattern the message about the first item that may need the user is held to:
        a question for how an event went or an intention to ask, an opening that says the
        kind of news for the rest (None: nothing to tell, or a free message)."""
        if not self.actionable:
            return None
        item = self.actionable[0]
        if item.kind == "intention":
            return QUESTION if _asks(item.text) else None
        return OPENINGS.get(item.kind)

    def lines(self) -> list[str]:
        """The items numbered, the actionable ones first."""
        ordered = [*self.actionable, *(i for i in self.items if not i.actionable)]
        return [f"{number}. {item.line()}" for number, item in enumerate(ordered, 1)]


def _asks(intention: str) -> bool:
    """An intention to ask the user something ("Ask how the move went")."""
    words = intention.split(maxsplit=1)
    return len(words) == 2 and words[0].lower() == "ask"
