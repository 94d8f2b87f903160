"""A memory's text as it is shown with a message: its sentences that bear on the message.

Every memory line shown with a message is read anew by the local server before the reply's
first word, and on two cores each token of it costs about as much as a word of the reply
waited for. Long memories (a chat line of a few sentences, greetings and all) were most of
what a turn added to the prompt in a lived-in data folder. A memory longer than
``FOCUS_CHARS`` is cut to its sentences that share the most words with the message, in their
order; with no word in common, its first sentences. Its speaker ("Maria: ") stays. No mark
shows where sentences were left out: the 0.5B model wrote a "…" shown so into a reply. The
memory itself is unchanged in the store and on screen.
"""

from __future__ import annotations

import re

from assistant.agent.checks.text import sentences as sentences_of
from assistant.agent.told import terms

# How long a memory's text shown with a message may be (characters), about a sentence or two.
FOCUS_CHARS = 120
ELIDED = "…"
# A line's speaker: a name or two before a colon ("User: ", "Brain OS: ", "Maria: ").
_SPEAKER = re.compile(r"^(?:[A-Z][\w'-]*)(?: [A-Z][\w'-]*)?: ")


def focused(text: str, about: str, limit: int = FOCUS_CHARS) -> str:
    """``text`` cut to its sentences that bear most on ``about`` (all of it when it is
    ``limit`` characters or fewer)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    speaker = _SPEAKER.match(text)
    head = speaker.group(0) if speaker else ""
    body = text[len(head) :]
    sentences = [s.strip() for s in sentences_of(body) if s.strip()]
    wanted = terms(about)
    shared = [len(terms(sentence) & wanted) for sentence in sentences]
    # The sentences sharing most words first (the earlier of two alike), as many as fit.
    order = sorted(range(len(sentences)), key=lambda i: (-shared[i], i))
    chosen: list[int] = []
    room = limit - len(head)
    for index in order:
        if len(sentences[index]) <= room or not chosen:
            chosen.append(index)
            room -= len(sentences[index]) + 1
    return head + " ".join(_cut(sentences[index], limit - len(head)) for index in sorted(chosen))


def _cut(sentence: str, limit: int) -> str:
    """A sentence longer than ``limit`` cut at a word, "…" after it."""
    if len(sentence) <= limit:
        return sentence
    return sentence[: limit - 1].rsplit(" ", 1)[0] + ELIDED
