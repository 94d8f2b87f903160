"""A meal suggested to the user keeps to the diet, allergies and health they told of.

Told the user is vegetarian, both packaged models still suggested dishes with meat. The human
block's lines (about_user.py) say what the user does not eat; each kind of diet excludes a
family of foods (a vegetarian eats no meat or fish, a coeliac no wheat). A reply to a request
about food is checked sentence by sentence as it streams: one that names an excluded food (not
"vegan cheese", "gluten-free bread" or "without ham") is not shown, the stream is closed, and
the reply is asked for again with what to leave out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_MEAT = [
    "meat",
    "chicken",
    "beef",
    "pork",
    "bacon",
    "ham",
    "lamb",
    "mutton",
    "turkey",
    "sausage",
    "steak",
    "mince",
    "veal",
    "duck",
    "venison",
    "chorizo",
    "salami",
    "pepperoni",
    "prosciutto",
    "pancetta",
    "meatball",
    "gammon",
    "brisket",
]
_FISH = [
    "fish",
    "salmon",
    "tuna",
    "cod",
    "haddock",
    "trout",
    "mackerel",
    "sardine",
    "anchovy",
    "anchovies",
    "seafood",
    "prawn",
    "shrimp",
    "crab",
    "lobster",
    "mussel",
    "clam",
    "oyster",
    "scallop",
    "squid",
    "octopus",
]
_SHELLFISH = [
    "shellfish",
    "prawn",
    "shrimp",
    "crab",
    "lobster",
    "mussel",
    "clam",
    "oyster",
    "scallop",
    "crayfish",
]
_DAIRY = [
    "milk",
    "cheese",
    "butter",
    "cream",
    "yogurt",
    "yoghurt",
    "parmesan",
    "mozzarella",
    "ricotta",
    "feta",
    "cheddar",
    "ghee",
    "mascarpone",
    "halloumi",
    "paneer",
    "custard",
]
_EGG = ["egg", "omelette", "omelet", "frittata", "mayonnaise", "meringue", "quiche"]
_GLUTEN = [
    "wheat",
    "bread",
    "pasta",
    "flour",
    "toast",
    "couscous",
    "barley",
    "rye",
    "bagel",
    "croissant",
    "pizza",
    "spaghetti",
    "noodle",
    "cracker",
    "biscuit",
    "muffin",
    "tortilla",
    "pastry",
]
_PORK = [
    "pork",
    "bacon",
    "ham",
    "sausage",
    "chorizo",
    "salami",
    "pepperoni",
    "prosciutto",
    "pancetta",
    "lard",
    "gammon",
]
_ALCOHOL = [
    "wine",
    "beer",
    "rum",
    "vodka",
    "whisky",
    "whiskey",
    "gin",
    "brandy",
    "sherry",
    "cider",
    "liqueur",
]
_NUTS = [
    "nut",
    "peanut",
    "almond",
    "walnut",
    "cashew",
    "hazelnut",
    "pecan",
    "pistachio",
    "macadamia",
    "praline",
    "marzipan",
]

# What each kind of diet or condition leaves out.
_EXCLUDES: dict[str, list[str]] = {
    "vegetarian": _MEAT + _FISH,
    "vegan": _MEAT + _FISH + _DAIRY + _EGG + ["honey"],
    "pescatarian": _MEAT,
    "halal": _PORK + _ALCOHOL,
    "kosher": _PORK + _SHELLFISH,
    "lactose": _DAIRY,
    "dairy": _DAIRY,
    "coeliac": _GLUTEN,
    "gluten": _GLUTEN,
    "meat": _MEAT,
    "fish": _FISH,
    "shellfish": _SHELLFISH,
    "pork": _PORK,
    "alcohol": _ALCOHOL,
    "egg": _EGG,
    "eggs": _EGG,
    "nut": _NUTS,
    "nuts": _NUTS,
    "peanut": ["peanut"],
    "peanuts": ["peanut"],
}
# Words before a food that make it not that food.
_FREE_OF = {
    "vegan",
    "vegetarian",
    "veggie",
    "plant-based",
    "meat-free",
    "dairy-free",
    "gluten-free",
    "egg-free",
    "nut-free",
    "non-alcoholic",
    "alcohol-free",
    "lactose-free",
    "no",
    "without",
    "skip",
    "avoid",
    "instead",
    "free",
    "oat",
    "soy",
    "almond",
    "coconut",
    "rice",
}
_LINES = ("Diet:", "Allergic to:", "Health:")
_SENTENCE_END = re.compile(r"[.!?]\s")


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


def named_food(sentence: str, foods: Iterable[str]) -> str | None:
    """The first excluded food ``sentence`` suggests (not one it says to leave out)."""
    words = re.findall(r"[a-z][a-z-]*", sentence.lower())
    wanted = set(foods)
    for index, word in enumerate(words):
        base = _singular(word)
        for food in (word, base, base.rstrip("e")):
            if food in wanted:
                before = set(words[max(0, index - 2) : index])
                if not before & _FREE_OF:
                    return food
    return None


class DietCheck:
    """Feed it a reply's text as it streams; it shows whole sentences that name no excluded
    food. ``named``: the food the first one that did named (the reply is then asked again);
    ``dropping`` (the reply asked again): such a sentence is left out and the rest shown."""

    def __init__(self, foods: Iterable[str], dropping: bool = False) -> None:
        self.foods = tuple(foods)
        self.dropping = dropping
        self.named: str | None = None
        self.dropped = False
        self._held = ""

    def feed(self, piece: str) -> str:
        if not self.foods or self.named is not None:
            return "" if self.named is not None else piece
        self._held += piece
        out = ""
        while (end := _SENTENCE_END.search(self._held)) is not None:
            sentence, self._held = self._held[: end.end()], self._held[end.end() :]
            out += self._checked(sentence)
            if self.named is not None:
                return out
        return out

    def flush(self) -> str:
        if not self.foods or self.named is not None:
            return ""
        held, self._held = self._held, ""
        return self._checked(held)

    def _checked(self, sentence: str) -> str:
        food = named_food(sentence, self.foods)
        if food is None:
            return sentence
        if self.dropping:
            self.dropped = True
        else:
            self.named = food
        return ""
