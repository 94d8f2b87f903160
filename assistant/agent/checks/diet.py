"""A meal suggested to the user keeps to the diet, allergies and health they told of.

Told the user is vegetarian, both packaged models still suggested dishes with meat. The human
block's lines (about_user.py) say what the user does not eat; each kind of diet excludes a
family of foods (a vegetarian eats no meat or fish, a coeliac no wheat: foods.json). A reply to
a request about food is checked sentence by sentence as it streams: one that names an excluded
food (not "vegan cheese", "gluten-free bread" or "without ham") is not shown, the stream is
closed, and the reply is asked for again, told what to leave out; in that second reply, or
after a sentence already shown, a sentence that names it is dropped. A first sentence that is
a cheer alone ("Sure!") waits for the first words of the meal it opens: shown at once, with
the meal left out after it, "Sure!" was all the 0.5B model's user got.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Self

from assistant.agent.about_user import about_food
from assistant.agent.checks.check import Check, Seen, Verdict
from assistant.agent.checks.text import CHEER_WORDS, SENTENCE_END
from assistant.agent.reply_form import ReplyForm

_FOODS = json.loads((Path(__file__).parent / "foods.json").read_text(encoding="utf-8"))
_FAMILIES: dict[str, list[str]] = _FOODS["families"]
# What each kind of diet or condition leaves out: its families' foods, or the word's own.
_EXCLUDES: dict[str, list[str]] = {
    diet: [food for part in parts for food in _FAMILIES.get(part, [part])]
    for diet, parts in _FOODS["excludes"].items()
}
# Words before a food that make it not that food.
_FREE_OF = frozenset(_FOODS["free_of"])
# Said before the user's message when a meal is asked for again.
LEAVE_OUT = (
    "The user does not eat {food}, as they told you: suggest something that keeps to what they eat."
)
_LINES = ("Diet:", "Allergic to:", "Health:")
# How many words of the sentence after a cheer it waits for: a list written as one long
# sentence held "Sure!" back 12 s; once these name no excluded food, the cheer is said.
CHEER_HELD_WORDS = 8


def excluded_foods(block: str) -> tuple[str, ...]:
    """The foods the human block's diet, allergy and health lines leave out."""
    foods: list[str] = []
    eats: list[str] = []
    for line in block.splitlines():
        if not line.startswith(_LINES):
            continue
        for item in line.split(":", 1)[1].split(";"):
            words = re.findall(r"[a-z]+", item.lower())
            if words[:1] == ["eats"]:
                eats += _EXCLUDES.get(words[-1], words[1:]) if len(words) > 1 else []
                continue
            known = [_EXCLUDES[word] for word in words if word in _EXCLUDES]
            if known:
                foods += [food for family in known for food in family]
            elif line.startswith("Allergic to:"):
                foods += [_singular(word) for word in words if len(word) > 2]
    kept = dict.fromkeys(food for food in foods if food not in set(eats))
    return tuple(kept)


def _singular(word: str) -> str:
    if word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if word.endswith("s") and not word.endswith("ss") else word


# Words that join a list of foods, which a word that leaves food out before the list leaves
# out whole ("no meat, fish, eggs or dairy").
_JOINS = frozenset(("and", "or", "nor"))


def _food(word: str, wanted: set[str]) -> str | None:
    base = _singular(word)
    return next((food for food in (word, base, base.rstrip("e")) if food in wanted), None)


def named_food(sentence: str, foods: Iterable[str]) -> str | None:
    """The first excluded food ``sentence`` suggests (not one it says to leave out, alone or
    in a list after the word that leaves it out)."""
    words = re.findall(r"[a-z][a-z-]*", sentence.lower())
    wanted = set(foods)
    for index, word in enumerate(words):
        food = _food(word, wanted)
        if food is None:
            continue
        start = index
        while start > 0 and (words[start - 1] in _JOINS or _food(words[start - 1], wanted)):
            start -= 1
        if not set(words[max(0, start - 2) : index]) & _FREE_OF:
            return food
    return None


class DietCheck(Check):
    """Feed it a reply's text as it streams; it shows whole sentences that name no excluded
    food. ``named``: the food the first one that did named (the reply is then asked again);
    ``dropping`` (the reply asked again): such a sentence is left out and the rest shown."""

    name = "diet"

    def __init__(self, foods: Iterable[str], dropping: bool = False) -> None:
        self.foods = tuple(foods)
        self.dropping = dropping
        self.named: str | None = None
        self.dropped = False
        self._held = ""
        self._released = False
        self._cheer = ""  # a short first sentence, shown with the one after it

    @classmethod
    def for_step(cls, form: ReplyForm, seen: Seen) -> Self:
        """Armed for a reply about food to a user whose diet leaves something out."""
        foods = excluded_foods(seen.human) if about_food(seen.heard) else ()
        return cls(foods, dropping=form.leaving_out is not None)

    @property
    def verdict(self) -> Verdict:
        if self.named is not None:
            return Verdict.REASK
        return Verdict.TRIM if self.dropped else Verdict.PASS

    def reasked(self, form: ReplyForm) -> ReplyForm:
        return replace(form, leaving_out=self.named)

    def reason(self) -> str:
        if self.named is not None:
            return f"the meal named {self.named}, which the user does not eat"
        return "a sentence naming a food the user does not eat was left out" if self.dropped else ""

    def feed(self, piece: str) -> str:
        if not self.foods or self.named is not None:
            return "" if self.named is not None else piece
        self._held += piece
        out = ""
        while (end := SENTENCE_END.search(self._held)) is not None:
            sentence, self._held = self._held[: end.end()], self._held[end.end() :]
            out += self._checked(sentence)
            if self.named is not None:
                return out
        under_way = self._cheer and len(self._held.split()) > CHEER_HELD_WORDS
        if under_way and named_food(self._held, self.foods) is None:  # none excluded so far
            out, self._cheer, self._released = out + self._cheer, "", True
        return out

    def flush(self) -> str:
        if not self.foods or self.named is not None:
            return ""
        held, self._held = self._held, ""
        shown = self._checked(held)
        if self.named is None and self._cheer:  # the reply was the cheer alone
            shown, self._cheer = self._cheer + shown, ""
        return shown

    def _checked(self, sentence: str) -> str:
        food = named_food(sentence, self.foods)
        if food is None:
            if not self._released and 0 < len(sentence.split()) <= CHEER_WORDS:
                self._cheer += sentence
                return ""
            self._released |= bool(sentence.strip())
            cheer, self._cheer = self._cheer, ""
            return cheer + sentence
        # Past a sentence already shown, asked again, the user saw two meals, one after the
        # other: the sentence is left out instead.
        if self.dropping or self._released:
            self.dropped = True
        else:
            self.named = food
        return ""
