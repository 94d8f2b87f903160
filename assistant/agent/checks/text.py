"""How the checks read a reply's text: one normal form to compare words in, and where a
sentence ends."""

from __future__ import annotations

import re

# A sentence's end as the text streams: its mark, once the space after it shows it is one
# (so "3.5" and "Dr.Foo" do not end one).
SENTENCE_END = re.compile(r"[.!?]\s")
# A whole sentence within a finished text (the last one needs no space after it).
SENTENCE = re.compile(r".+?[.!?](?=\s|$)", re.DOTALL)
ENDS = ".!?"
# A reply this short is a cheer or a nod ("Sure!", "Of course."), no answer.
CHEER_WORDS = 2
# A capitalised word as a name is written, accents and all ("Tomé", "Søren", "Łucja"): a name
# read only up to its first accent was a different name ("Tom"), which nobody said.
UPPER = "A-ZÀ-ÖØ-Þ\u0100-\u024f"
LOWER = "a-zß-öø-ÿ\u0100-\u024f"
NAME_WORD = f"[{UPPER}][{LOWER}]+"


def straight(text: str) -> str:
    """``text`` with typographic apostrophes made plain (the models write both)."""
    return text.replace("\u2019", "'")


def normal(text: str) -> str:
    """``text`` as the checks compare it: plain apostrophes, lower case, single spaces."""
    return " ".join(straight(text).lower().split())


# Marks between words: a copy said with a comma for a full stop ("Okay, I'll ..." for "Okay.
# I'll ...") is the same words said again.
_MARKS = re.compile(r"[^\w\s']+")


def compared(text: str, whole: bool = False) -> str:
    """``text`` as copies are compared: its normal form with marks read as spaces, and a
    space after its last word once that word is whole (a mark or a space came after it, or
    the text is ``whole``), so that "got it " is not the start of "got item"."""
    spaced = _MARKS.sub(" ", straight(text).lower())
    words = " ".join(spaced.split())
    ended = whole or spaced[-1:].isspace()
    return f"{words} " if words and ended else words


def sentences(text: str) -> list[str]:
    """The sentences of a finished ``text``, a last one with no mark included: the 0.5B model
    copied a memory's bracketed aside ("[shares a photo: ...]", no full stop) into reply after
    reply, and left out, it was never one to compare with."""
    found = [match.group(0) for match in SENTENCE.finditer(text)]
    rest = text[sum(map(len, found)) :].strip()
    return [*found, rest] if rest else found


# The first person's words as the second person's: what a reply in the user's voice says, said
# to them.
SWAPS = {
    "i": "you",
    "i'm": "you're",
    "im": "you're",
    "i've": "you've",
    "i'll": "you'll",
    "i'd": "you'd",
    "me": "you",
    "my": "your",
    "mine": "yours",
    "myself": "yourself",
}

# The second person's words in a sentence said in the user's voice: the assistant, to whom
# they spoke ("you told me", said back, is "I told you"). "you" after a clause's opening
# (or none) is its subject, left as it is: "I" would need the verb after it turned too.
BACK = {"you": "me", "your": "my", "yours": "mine", "yourself": "myself"}
_CLAUSE_OPENERS = frozenset(
    ("that", "if", "when", "because", "and", "but", "so", "as", "while", "where", "or")
)


def turned_back(word: str, previous: str | None) -> str | None:
    """What the user's second-person ``word`` (lower case) is, said back to them, after the
    word ``previous`` (lower case; None at a sentence's start); None to leave it."""
    if word == "you" and (previous is None or previous in _CLAUSE_OPENERS):
        return None
    return BACK.get(word)


_ANY_WORD = re.compile(r"[\w'\u2019-]+")


def words_of(text: str) -> set[str]:
    """The words of ``text``, lower case, each also without a possessive ("ana's", "ana")."""
    found = {word.lower() for word in _ANY_WORD.findall(text)}
    return found | {re.split("['\u2019]", word)[0] for word in found}
