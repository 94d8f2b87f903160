"""Reading a query's text: its words for the full-text search, and the names it asks about."""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from memory.mirror import openers

_WORD = re.compile(r"[^\W\d_][\w-]*")
# Capitalised only because they open the question: never taken for names there.
_OPENERS = frozenset(
    re.findall(
        r"\w+",
        "what when where who whom whose why how which did do does is are was were has have had "
        "can could would should will shall may might must tell list name describe give show find "
        "please the a an in on at for from with during after before since this that these those "
        "there it its my our your their his her i we you they",
    )
)


def lexical_query(query: str) -> str:
    """The query as plain lower-case words for BM25: the full-text parser reads quotes as a
    phrase (which an index without positions cannot answer) and AND / OR as operators."""
    return " ".join(re.findall(r"\w+", query.lower()))


def query_names(query: str) -> tuple[str, ...]:
    """Words of the query that may be names: those that start with a capital letter, but not
    a question or function word that is capitalised because it opens a sentence ("What")."""
    names: dict[str, None] = {}
    for match in _WORD.finditer(query):
        word = match.group()
        if len(word) < 2 or not word[0].isupper():
            continue
        before = query[: match.start()].rstrip(" \t\n\"'(")
        opens_sentence = not before or before[-1] in ".?!"
        if not (opens_sentence and word.lower() in _OPENERS):
            names[word] = None
    return tuple(names)


def without_names(query: str, names: Sequence[str]) -> str:
    """The query with the names (and their possessive 's) taken out; empty when nothing but
    question or function words would be left."""
    if not names:
        return ""
    pattern = r"(?<!\w)(?:" + "|".join(re.escape(n) for n in names) + r")(?:['\u2019]s)?(?!\w)"
    rest = " ".join(re.sub(pattern, " ", query).split())
    words = [w.lower() for w in _WORD.findall(rest)]
    return rest if any(w not in _OPENERS for w in words) else ""


def opening_names(
    texts: pa.Array | pa.ChunkedArray, names: Sequence[str]
) -> tuple[NDArray[np.bool_], tuple[str, ...]]:
    """Which texts open with one of the names ("Anna: ...", "Anna moved ..."), and which of
    the names open at least one text."""
    words = np.asarray(openers(texts).to_pylist(), dtype=object)
    hits = np.isin(words, list(names))
    present = set(words[hits].tolist())
    return hits, tuple(name for name in names if name in present)
