"""Where a fact in an answer about someone in the user's life came from: a line of what the
model was told that speaks of what the question asks about.

A name or a number the model was told passes the grounding check wherever it was told, and
asked about someone it was never told of, the 0.5B model answered with a name or a number
told of someone else in the conversation, the relation swapped. A true answer takes its fact
from a line that speaks of what was asked: the line holds the fact and at least half of the
question's words (a person the question names by relation counts by name too, as the human
block links them). Words that ask for an answer's form ("name", "old", "how many") are not
counted: the line that holds the answer seldom says them ("he's eleven"). Only a question
about someone (a relation, "my wife", or a name) is held to it: a question about the user's
own things ("What's my job?") is answered from lines that seldom share its words ("I bake
bread for a living"), and a question that names two things, one of them told ("Who is Pip's
vet?" after "Tomas walks Pip"), passes.
"""

from __future__ import annotations

import math
import re

from assistant.agent.checks.text import straight, words_of
from assistant.agent.told import FORM_WORDS, linked_terms, terms
from memory.people import RELATIONS

# Someone the question asks about by how they are related to the user (plurals too).
_RELATION = re.compile(rf"\b(?:{RELATIONS})(?:s|ren|'s)?\b", re.IGNORECASE)
# Someone it names: a capitalised word past the first.
_NAMED = re.compile(r"(?<=\w[\s,])[A-Z][a-z]+")
_LINE = re.compile(r"(?<=[.!?])\s+|\n+")


class Sources:
    """The lines of what the model was told (``told``), each a source a fact may come from
    for an answer to ``question``."""

    def __init__(self, question: str, told: str, human: str = "") -> None:
        linked = linked_terms(question, human)
        asked = straight(question)
        self._subject = [words for term, words in linked.items() if term not in FORM_WORDS]
        self._about_someone = bool(_RELATION.search(asked) or _NAMED.search(asked))
        self._need = math.ceil(len(self._subject) / 2)
        lines = f"{straight(told)}\n{straight(human)}"
        self._lines = [line for line in _LINE.split(lines) if line.strip()]

    def unfounded(self, fact: str) -> bool:
        """Whether no line holding ``fact`` (lower case, as ``grounding.facts_in`` reads it)
        speaks of what the question asks about."""
        if not (self._about_someone and self._subject):
            return False
        return not any(self._speaks_of(line) for line in self._lines if fact in words_of(line))

    def _speaks_of(self, line: str) -> bool:
        said = terms(line)
        return sum(bool(words & said) for words in self._subject) >= self._need
