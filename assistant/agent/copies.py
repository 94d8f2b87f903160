"""A reply never opens by copying an earlier one.

The 0.5B model, deep in a conversation, answers new messages with an earlier reply word for
word: one cheerful reply to good news came back as the answer to unrelated questions and news
for many turns after, so that much of a long conversation was the same few words. The first
sentences of each recent reply (four words at least) are an opening the next reply may not
have: the refusal guard (refusal.py) holds the reply while it could still be one, and one
that is, is asked for once more, held to open willingly.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable

# Shorter openings ("Okay.", "Got it!") are fine to say again.
MIN_WORDS = 4
# A whole reply this long or longer may not be said again (one word, "Okay.", may).
SHORT_WORDS = 2
# How many recent replies are remembered.
RECENT = 12

_SENTENCE = re.compile(r".+?[.!?](?=\s|$)", re.DOTALL)


def _normal(text: str) -> str:
    return " ".join(text.replace("\u2019", "'").lower().split())


def opening(message: str) -> str:
    """The message's first sentences, as few as make ``MIN_WORDS`` words ("Oh, lovely! A new
    beehive, how fun." from the first two); all of it if it has fewer."""
    text = message.strip()
    words = 0
    for sentence in _SENTENCE.finditer(text):
        words += len(sentence.group(0).split())
        if words >= MIN_WORDS:
            return text[: sentence.end()]
    return text


class RecentReplies:
    """The openings of the last few replies, as the refusal guard compares them."""

    def __init__(self, replies: Iterable[str] = ()) -> None:
        self._openings: deque[str] = deque(maxlen=RECENT)
        self._replies: deque[str] = deque(maxlen=RECENT)
        for reply in replies:
            self.add(reply)

    def sentences(self) -> list[str]:
        """Every sentence of the recent replies."""
        return [m.group(0) for reply in self._replies for m in _SENTENCE.finditer(reply)]

    def add(self, reply: str) -> None:
        self._replies.append(reply)
        start = _normal(opening(reply))
        # A short reply said again whole is a copy too: the 0.5B model answered news after
        # news with the same two-word goodbye.
        if len(start.split()) >= MIN_WORDS or len(_normal(reply).split()) >= SHORT_WORDS:
            self._openings.append(start)

    def openings(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self._openings))


def echo_of(heard: str) -> tuple[str, ...]:
    """The opening of the user's own words, which a reply may not open with: the small models
    wrote a plain statement back, word for word, as their reply (nothing for a message
    shorter than ``MIN_WORDS`` words)."""
    start = _normal(opening(heard))
    return (start,) if len(start.split()) >= MIN_WORDS else ()
