"""Someone the user names by how they are related to them ("my cousin Wilhelmina", "our
neighbour, Bram"): what the agent's reply must name (assistant/agent/naming.py), and whose facts a
sentence states rather than the user's (memory/graph/extract.py)."""

from __future__ import annotations

import re

RELATIONS = (
    "sister|brother|sibling|son|daughter|child|kid|mum|mom|mother|dad|father|parent|"
    "grandma|grandmother|granny|grandpa|grandfather|grandson|granddaughter|aunt|uncle|"
    "cousin|niece|nephew|wife|husband|partner|spouse|fiance|fiancee|girlfriend|boyfriend|"
    "friend|best friend|neighbour|neighbor|colleague|coworker|co-worker|boss|manager|"
    "flatmate|roommate|housemate|teacher|doctor|dentist|landlord|landlady|mentor|student|"
    "stepson|stepdaughter|stepmother|stepfather|godson|goddaughter|dog|cat|puppy|kitten"
)
# "my cousin Wilhelmina", "our neighbour, Bram", "my little brother Casimir", "my
# sister-in-law Imogen".
_NAMED = re.compile(
    rf"\b(?i:my|our) (?:(?i:\w+) )?(?i:{RELATIONS})(?:-in-law)?,? ([A-Z][a-z]+(?:-[A-Z][a-z]+)?)\b"
)
# How a relation between the user and someone reads ("has brother", "is married to"): what
# "my cousin Wilhelmina" states of the user, and no more.
_KIN = re.compile(rf"\b(?:{RELATIONS}|married|engaged|related|has)\b", re.IGNORECASE)
# Words with a capital that follow a relation without being a name ("my son Is ...", when the
# user types in title case, or "my friend I met").
_NOT_NAMES = frozenset({"I", "I'm", "Is", "Was", "And", "But", "The", "Who", "Has", "Had"})


def named_relative(text: str) -> str | None:
    """The first person ``text`` names by their relation to the speaker ("Wilhelmina" in "My
    cousin Wilhelmina just took up beekeeping"), if any."""
    for match in _NAMED.finditer(text.replace("\u2019", "'")):
        if match.group(1) not in _NOT_NAMES:
            return match.group(1)
    return None


def is_kin(relation: str) -> bool:
    """Whether ``relation`` says how someone is related to the speaker ("has brother", "is
    father of"), not what they did ("retired")."""
    return _KIN.search(relation) is not None
