"""News about someone the user names is answered with their name.

Told news about a relative or a friend by name, the small models congratulated the user on
the other person's new job as if it were the user's, or answered with "he" or "she" and never
said the name (docs/BENCHMARKS.md, "Judgement"). Who is named is plain in the words ("my
cousin Wilhelmina"), so code finds it, and the message is held by the grammar to say the name
in its first sentence: the model still chooses every word, and where in that sentence to put it.
"""

from __future__ import annotations

import re

from assistant.agent.checks.text import straight
from assistant.agent.routing import is_question
from memory.people import named_relative

# How the message patterns of tools.py end: the rest of the message, any characters but a
# closing quote.
_REST = '[^"]*'
# Before the name: the first sentence's words. Held only to say it somewhere, the 1.5B model
# said a reply without it and then tacked on a note of its own that named the person.
_FIRST_SENTENCE = '[^".!?]*'


def named_in_news(message: str) -> str | None:
    """The person the user's ``message`` tells of by name ("Wilhelmina" in "My cousin
    Wilhelmina just took up beekeeping"); None for a question (its answer is grounded
    instead) or no name."""
    said = straight(message.strip())
    return None if is_question(said) else named_relative(said)


def saying(name: str, pattern: str | None = None) -> str:
    """A message pattern that also holds the message to say ``name`` in its first sentence:
    ``pattern`` (one of tools.py's, ending in any characters but a quote) or, for none, any
    message."""
    opening = pattern[: -len(_REST + "$")] if pattern is not None else "^"
    if pattern is not None and not pattern.endswith(_REST + "$"):
        raise ValueError(f"not a message pattern: {pattern!r}")
    if not re.fullmatch(r"[A-Za-z][A-Za-z-]*", name):
        raise ValueError(f"not a name: {name!r}")  # a pattern's special characters
    return f"{opening}{_FIRST_SENTENCE}{name}{_REST}$"
