"""Importance at creation (Park et al. 2023, section 4.1), rated by code: obvious small talk by
rule, everything else by its nearest anchors, memories a careful person rated, in the embedding
space the record is stored in.

Why not the LLM, as the paper does: on a labelled set (docs/BENCHMARKS.md, "Judgement") the
packaged models often missed a careful person's band, with the paper's prompt and with an
anchored scale in the prompt alike, rating a serious health fact as mundane and a greeting as
poignant; the three nearest anchors found the band of nearly every memory. The rating costs a
product of the record's own vector with ~110 anchor vectors (no model call, no background
queue), so every record is rated the moment it is stored, and a stronger LLM endpoint changes
nothing here.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from memory.embedder import Embedder

# The nearest anchors that vote, each weighted by its cosine similarity to this power (so a
# near-paraphrase outvotes two loose neighbours). Chosen on the labelled set: k = 1 overfits
# one anchor, k >= 5 pulls ratings to the middle.
NEIGHBOURS = 3
SHARPNESS = 4

# Words that carry nothing worth keeping on their own: a text made only of these (and of the
# phrases below) is small talk, rated 1 without looking further.
SMALL_TALK_WORDS = frozenset(
    """
    hi hello hey hiya morning afternoon evening night good great nice cool fine ok okay
    alright right sure yes yeah yep no nope thanks thank you cheers bye goodbye see later
    soon lol haha hah wow oh ah hmm um that's thats that it is was funny all for now too
    much very so well welcome you're your anytime np problem got it's awesome perfect lovely
    have day a the and i'm im am how are doing what's up
    """.split()  # noqa: SIM905 (a list of words reads best as words)
)
# An assistant's pleasantries: offers of help and acknowledgements with no content.
PLEASANTRIES = re.compile(
    r"how (?:can|may) i (?:help|assist)(?: you)?(?: today)?"
    r"|(?:is there )?anything else(?: i can (?:help|do)(?: you)? with)?"
    r"|let me know(?: if (?:you need anything|there's anything)(?: else)?)?"
    r"|(?:i(?:'m| am) )?(?:happy|glad) to help"
    r"|i can help(?: you)? with that"
    r"|what can i do for you(?: today)?"
    r"|(?:one|just a) (?:moment|second)"
    r"|of course|no problem|you're welcome|my pleasure",
)
# "User: ", "Brain OS: ": who said it, as the stream stores a line of conversation.
_SPEAKER = re.compile(r"^[A-Z][\w ]{0,20}:\s+")
_WORD = re.compile(r"[a-z']+")
# "Hi, I'm Odette." is made of greeting words and a name, but tells who is speaking.
_INTRODUCTION = re.compile(r"\b(?:[Ii]'m|[Ii] am|[Mm]y name is|[Cc]all me)\s+[A-Z]")


def small_talk(text: str) -> bool:
    """Greetings, thanks, "ok", laughter and an assistant's offers of help, with at most a
    name besides (a capitalised word: "Thanks, Bram!")."""
    said = _SPEAKER.sub("", text.strip()).replace("\u2019", "'")
    if _INTRODUCTION.search(said):
        return False
    lowered = PLEASANTRIES.sub(" ", said.lower())
    words = _WORD.findall(lowered)
    names = {w.lower() for w in re.findall(r"\b[A-Z][a-z]+\b", said[1:])}
    others = [w for w in words if w not in SMALL_TALK_WORDS]
    return len(words) <= 12 and (not others or (len(others) == 1 and others[0] in names))


class ImportanceScale:
    """Rates a memory 1-10 from its stored vector: 1 for small talk (by rule), else the
    similarity-weighted mean rating of its NEIGHBOURS nearest anchors."""

    def __init__(self, embedder: Embedder, anchors: Mapping[int, Sequence[str]]) -> None:
        texts = [text for rating in sorted(anchors) for text in anchors[rating]]
        if not texts or any(not 1 <= rating <= 10 for rating in anchors):
            raise ValueError("anchors need ratings 1-10 and at least one text")
        self._embedder = embedder
        self._texts = texts
        self._ratings = np.array(
            [rating for rating in sorted(anchors) for _ in anchors[rating]], np.float32
        )
        self._vectors: NDArray[np.float32] | None = None
        self._embedding = threading.Lock()
        # Ratings made under other anchors (or rules) are made again: see MemoryStream.
        digest = hashlib.sha256(repr(sorted(anchors.items())).encode())
        rules = f"{NEIGHBOURS} {SHARPNESS} {sorted(SMALL_TALK_WORDS)} {PLEASANTRIES.pattern}"
        digest.update(rules.encode())
        self.version = digest.hexdigest()[:16]

    def rate(self, text: str, vector: NDArray[np.float32]) -> int:
        if small_talk(text):
            return 1
        anchors = self._anchor_vectors()
        norm = float(np.linalg.norm(vector))
        similarity = anchors @ (vector / norm) if norm else np.zeros(len(anchors), np.float32)
        nearest = np.argsort(-similarity)[:NEIGHBOURS]
        weights = np.maximum(similarity[nearest], 0.0) ** SHARPNESS
        if not weights.sum():
            return round(float(self._ratings[nearest].mean()))
        return round(float((weights * self._ratings[nearest]).sum() / weights.sum()))

    def prepare(self) -> None:
        """Embed the anchors now (a background thread does, so that the first memory of a
        conversation is not the one that waits for them)."""
        self._anchor_vectors()

    def _anchor_vectors(self) -> NDArray[np.float32]:
        # Embedded when first needed, not at construction: opening a store stays cheap.
        with self._embedding:
            if self._vectors is None:
                vectors = np.asarray(self._embedder.embed(self._texts), np.float32)
                norms = np.linalg.norm(vectors, axis=1, keepdims=True)
                self._vectors = (vectors / np.where(norms == 0, 1.0, norms)).astype(np.float32)
            return self._vectors


@dataclass(frozen=True)
class Rating:
    record_id: str
    importance: int
