"""What the user says about themselves, read by code into short lines of the core memory's human
block ("Diet: kosher", "Allergic to: sesame", "Partner: Anselm"), so that it is always in
view and the user can see and edit it. The packaged models almost never called the core memory
tools themselves: told a diet, the 1.5B model kept nothing and later suggested meat.

Only plain first-person statements are read; a question, or a sentence about someone else's
diet, is not. A line's key is its category: a later statement replaces a single fact (where
they live, their work) and adds to a list (allergies, diet, people of one kind).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from assistant.agent.checks.text import NAME_WORD, straight

_FLAGS = re.IGNORECASE
_NAME = rf"({NAME_WORD}(?:-{NAME_WORD})?)"
# Words that follow "I'm" at a greeting without being a name.
_NOT_NAMES = {
    "Back",
    "Fine",
    "Good",
    "Here",
    "Home",
    "Just",
    "Not",
    "Okay",
    "Ok",
    "So",
    "Sorry",
    "Still",
    "Well",
    "Very",
    "Really",
    "Tired",
    "Free",
    "Done",
    "Off",
}


@dataclass(frozen=True)
class Fact:
    """One line of the human block: ``key``: ``value``; ``adds``: a later fact of the same key
    adds to the line instead of replacing it."""

    key: str
    value: str
    adds: bool = False

    def line(self) -> str:
        return f"{self.key}: {self.value}"


# Key words match in any case, names only with their capital: (?i:...) scopes the flag.
_MY_NAME = re.compile(rf"\b(?i:my name is|my name's|call me|i'm called|i am called)\s+{_NAME}")
_GREETING_NAME = re.compile(
    rf"^(?i:hi|hello|hey|hiya|morning|good (?:morning|afternoon|evening))\b[^.!?]{{0,20}}?"
    rf"\b(?i:i'm|i am|it's|this is)\s+{_NAME}\b"
)

_DIET_WORDS = (
    ("vegetarian", "vegetarian"),
    ("vegan", "vegan"),
    ("pescatarian", "pescatarian"),
    ("pescetarian", "pescatarian"),
    ("halal", "halal"),
    ("kosher", "kosher"),
    ("lactose intolerant", "lactose intolerant (no dairy)"),
    ("lactose-intolerant", "lactose intolerant (no dairy)"),
    ("gluten-free", "gluten-free"),
    ("gluten free", "gluten-free"),
    ("coeliac", "coeliac (no gluten)"),
    ("celiac", "coeliac (no gluten)"),
    ("diabetic", "diabetic (watches sugar)"),
)
_DONT_EAT = re.compile(
    r"\b(?:i|we)\s+(?:don't|do not|can't|cannot|never|no longer)\s+(eat|drink|have)\s+"
    r"([a-z]+(?:(?:,\s*|\s+or\s+|\s+and\s+)(?!but\b|so\b|because\b|i\b)[a-z]+){0,3})",
    _FLAGS,
)
_DO_EAT = re.compile(r"\bi\s+do\s+eat\s+([a-z]+)\b", _FLAGS)
_ALLERGY = re.compile(
    r"\ballergic to\s+([a-z][a-z -]*?)(?=\s*(?:[.,;!?]|\band\b|\bbut\b|\bquite\b|\bso\b|$))",
    _FLAGS,
)
_ALLERGY_NOUN = re.compile(r"\bi have an?\s+([a-z]+(?: [a-z]+)?)\s+allergy\b", _FLAGS)
_HEALTH = re.compile(
    r"\bi(?:'ve| have| have got|'ve got)\s+((?:type [12] )?diabetes|asthma|epilepsy|"
    r"coeliac disease|celiac disease|high blood pressure|migraines|arthritis|a heart condition|"
    r"ibs|crohn's(?: disease)?|anaemia|anemia|hypertension)\b",
    _FLAGS,
)
_PEOPLE = (
    "wife|husband|partner|girlfriend|boyfriend|fiancée|fiancee|fiancé|fiance|"
    "twin sister|twin brother|sister|brother|son|daughter|mother|mum|mom|father|dad|"
    "grandson|granddaughter|grandmother|grandfather|grandma|grandpa|aunt|uncle|cousin|"
    "niece|nephew|boss|manager|best friend|flatmate|housemate|roommate|colleague|"
    "apprentice|supervisor|doctor|therapist|cat|dog|sheepdog|puppy|kitten|horse|parrot"
)
_MY_PERSON = re.compile(
    rf"\b(?i:my|our)\s+(?:[a-z]+\s+)?((?i:{_PEOPLE}))\b,?\s+(?i:is\s+called\s+|is\s+named\s+|"
    rf"called\s+|named\s+)?{_NAME}"
)
_HAVE_PET = re.compile(
    rf"\b(?i:i|we)\s+(?i:have|have got|'ve got)\s+(?i:an?)\s+(?:[a-z]+\s+){{0,2}}?"
    rf"((?i:cat|dog|puppy|kitten|horse|parrot|rabbit|hamster))\s+(?i:called|named)\s+{_NAME}"
)
_WORK_AS = re.compile(
    r"\bi\s+work\s+as\s+an?\s+([a-z]+(?:\s+[a-z]+){0,2}?)(?=\s+(?:for|at|in|with)\b|[.,!;]|$)",
    _FLAGS,
)
# "I restore old clocks for a living": the work is what they do.
_FOR_A_LIVING = re.compile(r"\bi\s+([a-z]+(?:\s+[a-z]+){0,3}?)\s+for\s+a\s+living\b", _FLAGS)
_I_AM_A = re.compile(r"\bi(?:'m| am)\s+an?\s+([a-z]+(?:\s+[a-z]+)?)\s+(?:in|at|for)\s+", _FLAGS)
# "I'm a bit late at ...", "I'm a big fan of ...": not a job.
_NOT_WORK = {"bit", "little", "lot", "fan", "big", "huge", "member", "regular", "new", "good"}
_LIVE_IN = re.compile(
    rf"\b(?i:i\s+(?:live|am living|'m living)\s+in)\s+{_NAME}"
    rf"|\b(?i:i(?:'ve)?\s+(?:just\s+)?moved\s+to)\s+{_NAME}"
)


def facts_in(text: str) -> list[Fact]:
    """The facts the user states about themselves in ``text`` (their own words, typed or
    heard); none from a question."""
    facts: list[Fact] = []
    for sentence in re.split(r"(?<=[.!?])\s+", straight(text).strip()):
        if not sentence or sentence.rstrip().endswith("?"):
            continue
        facts += _facts_in_sentence(sentence)
    return facts


def _facts_in_sentence(sentence: str) -> list[Fact]:
    facts: list[Fact] = []
    name = _MY_NAME.search(sentence) or _GREETING_NAME.search(sentence)
    if name and name.group(1) not in _NOT_NAMES:
        facts.append(Fact("Name", name.group(1)))
    lowered = sentence.lower()
    first_person = re.search(r"\b(?:i|i'm|i've|me|my|we|we're|our)\b", lowered) is not None
    if first_person:
        facts += [Fact("Diet", value, True) for word, value in _DIET_WORDS if word in lowered]
        facts += [
            Fact("Diet", f"no {_listed(found.group(2))}", True)
            for found in _DONT_EAT.finditer(sentence)
            if _food_like(found.group(2))
        ]
        if _DONT_EAT.search(sentence):
            facts += [Fact("Diet", f"eats {m.group(1)}", True) for m in _DO_EAT.finditer(sentence)]
        allergies = [*_ALLERGY.finditer(sentence), *_ALLERGY_NOUN.finditer(sentence)]
        facts += [Fact("Allergic to", m.group(1).strip(), True) for m in allergies]
        facts += [Fact("Health", m.group(1), True) for m in _HEALTH.finditer(sentence)]
    for found in _MY_PERSON.finditer(sentence):
        facts.append(Fact(found.group(1).capitalize(), found.group(2), True))
    for found in _HAVE_PET.finditer(sentence):
        facts.append(Fact(found.group(1).capitalize(), found.group(2), True))
    work = _WORK_AS.search(sentence) or _I_AM_A.search(sentence) or _FOR_A_LIVING.search(sentence)
    if work and work.group(1).lower().split()[0] not in _NOT_WORK:
        facts.append(Fact("Work", work.group(1).lower()))
    home = _LIVE_IN.search(sentence)
    if home:
        facts.append(Fact("Lives in", home.group(1) or home.group(2)))
    return facts


# What may follow "I don't eat/drink" as a diet (not "I don't eat much" or "before noon").
_NOT_FOOD = {"much", "a", "the", "before", "after", "at", "late", "early", "out", "anything"}


def _food_like(words: str) -> bool:
    first = words.split()[0].strip(",").lower()
    return first not in _NOT_FOOD


def _listed(words: str) -> str:
    return re.sub(r"\s*,\s*|\s+or\s+|\s+and\s+", ", ", words.strip().lower())


def merged(block: str, fact: Fact) -> str:
    """``block`` with ``fact`` in it: its key's line replaced, or added to for a list; the
    block unchanged when it says so already."""
    lines = block.splitlines()
    prefix = f"{fact.key}:"
    for index, line in enumerate(lines):
        if not line.startswith(prefix):
            continue
        held = line[len(prefix) :].strip()
        values = [value.strip() for value in held.split(";")]
        if fact.value.lower() in (value.lower() for value in values):
            return block
        lines[index] = f"{prefix} {held}; {fact.value}" if fact.adds else fact.line()
        return "\n".join(lines)
    return "\n".join([*lines, fact.line()]) if block.strip() else fact.line()


# A request that a stated diet, allergy or condition bears on.
_ABOUT_FOOD = re.compile(
    r"\b(?:recipe|recipes|cook|cooking|dinner|lunch|breakfast|brunch|supper|meal|meals|snack|"
    r"snacks|eat|eating|dish|dishes|dessert|bake|baking|food|menu|restaurant|takeaway|"
    r"drink|drinks|cocktail|pasta|salad|soup|sandwich)\b",
    _FLAGS,
)
# The human block's lines a meal must keep to.
_BEARS_ON_FOOD = ("Diet:", "Allergic to:", "Health:")


def about_food(text: str) -> bool:
    """Whether ``text`` asks about food or drink."""
    return _ABOUT_FOOD.search(text) is not None


# A question about what the user themselves may eat, which their diet, allergy and health lines
# answer ("what should I avoid eating", "am I allergic to anything").
_ASKS_OWN_DIET = re.compile(
    r"\b(?:i|i'm|my)\b.*\b(?:eat|eating|diet|allergic|allergy|allergies|foods?|avoid)\b|"
    r"\b(?:eat|diet|allergic|allergy|allergies|foods?|avoid)\b.*\b(?:i|i'm|my|me)\b",
    _FLAGS,
)


def diet_known(question: str, block: str) -> bool:
    """Whether ``question`` asks what the user may eat and the human block holds a line that
    answers it: with "Diet: vegan" in its prompt, both models said they did not know what the
    user could not eat."""
    if not question.rstrip().endswith("?") or not _ASKS_OWN_DIET.search(question):
        return False
    return any(line.startswith(_BEARS_ON_FOOD) for line in block.splitlines())


def constraints_for(text: str, block: str) -> str:
    """The human block's diet, allergy and health lines when ``text`` asks about food ("" when
    it does not, or none is known): shown next to the message, where a small model heeds
    them, rather than only at the top of the prompt."""
    if not about_food(text):
        return ""
    lines = [line for line in block.splitlines() if line.startswith(_BEARS_ON_FOOD)]
    if not lines:
        return ""
    told = " ".join(line if line.endswith(".") else f"{line}." for line in lines)
    return f"Keep to what the user told you: {told} Suggest nothing that goes against it."
