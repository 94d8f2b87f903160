"""The assistant's recent replies, as the checks compare a new one with them.

The 0.5B model, deep in a conversation, answers new messages with an earlier reply word for
word: one cheerful reply to good news came back as the answer to unrelated questions and news
for many turns after, so that much of a long conversation was the same few words. The first
sentences of each recent reply (four words at least) are an opening the next reply may not have
(opening.py), and every sentence of them one it may not say again after its first (loops.py).

An answer about the user's life may be said again, owned as such ("As I said, ..."), until the
user tells something new about what it speaks of: asked where someone lives now, after telling
of a move, the 0.5B model said its answer from before the move again.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from assistant.agent.checks.text import SENTENCE, normal, sentences
from assistant.agent.routing import is_question
from assistant.agent.told import terms

# Shorter openings ("Okay.", "Got it!") are fine to say again.
MIN_WORDS = 4
# A whole reply this long or longer may not be said again (one word, "Okay.", may).
SHORT_WORDS = 2
# How many recent replies are remembered: a conversation's worth. With twelve, the models
# said again a reply or a closing question from thirteen or more replies before.
RECENT = 40
# A sentence of a recent reply this long or longer is not said again: not as a reply's
# opening (opening.py), nor after it (loops.py). Shorter ones ("Sure thing.") may well be.
SENTENCE_WORDS = 5
# A reply's opening and its long sentences, as many as are kept of each recent reply to be
# said again as such.
OWNABLE_PER_REPLY = 4
# How many of the conversation's questions keep the openings of their answers, for the same
# question asked again (opening.py).
ASKED = 200


def opening(message: str) -> str:
    """The message's first sentences, as few as make ``MIN_WORDS`` words ("Oh, lovely! A new
    beehive, how fun." from the first two); all of it if it has fewer."""
    text = message.strip()
    words = 0
    for sentence in SENTENCE.finditer(text):
        words += len(sentence.group(0).split())
        if words >= MIN_WORDS:
            return text[: sentence.end()]
    return text


def lead(message: str) -> str | None:
    """The first ``MIN_WORDS`` words of a message whose opening (``opening``) runs past a
    short first sentence into a longer one; None for any other. A greeting of two words, the
    person's name said back and a different fact after it was a new opening every time, so
    one template opened reply after reply to news of every kind."""
    start = opening(message)
    first = SENTENCE.match(start)
    words = start.split()
    if first is None or first.end() == len(start) or len(words) <= MIN_WORDS:
        return None
    return " ".join(words[:MIN_WORDS])


class RecentReplies:
    """The last few replies: their openings and their sentences."""

    def __init__(self, replies: Iterable[str] = ()) -> None:
        self._openings: deque[str] = deque(maxlen=RECENT)
        self._replies: deque[str] = deque(maxlen=RECENT)
        # The user's words the replies now added answer, and the openings of the answers
        # each earlier message got (oldest first).
        self._asking = ""
        self._answers: dict[str, list[str]] = {}
        # The openings and long sentences of recent replies that may be said again as such,
        # until the user tells something new about what they speak of.
        # (each with its terms, read once).
        self._ownable: deque[tuple[str, set[str]]] = deque(maxlen=RECENT * OWNABLE_PER_REPLY)
        for reply in replies:
            self.add(reply)

    def hear(self, words: str) -> None:
        """The user's words that the replies added from now on answer ("" for none)."""
        self._asking = normal(words)
        if not words.strip() or is_question(words):
            return
        told = terms(words)
        self._answers = {
            asked: said for asked, said in self._answers.items() if not told & terms(asked)
        }
        kept = [(said, about) for said, about in self._ownable if not told & about]
        self._ownable = deque(kept, maxlen=RECENT * OWNABLE_PER_REPLY)

    def ownable(self, about: str = "") -> tuple[str, ...]:
        """The openings and long sentences of recent replies that may be said again, owned as
        such: nothing the user told since speaks of what they speak of (only those sharing a
        word with ``about``, if given)."""
        asking = terms(about) if about else None
        return tuple(
            dict.fromkeys(said for said, its in self._ownable if asking is None or asking & its)
        )

    def answers(self, words: str) -> tuple[str, ...]:
        """The openings of the replies that answered these same words before."""
        return tuple(self._answers.get(normal(words), ()))

    def sentences(self) -> list[str]:
        """Every sentence of the recent replies."""
        return [sentence for reply in self._replies for sentence in sentences(reply)]

    def long_sentences(self) -> tuple[str, ...]:
        """The recent replies' sentences of ``SENTENCE_WORDS`` words or more, as compared."""
        keys = (normal(sentence) for sentence in self.sentences())
        return tuple(dict.fromkeys(k for k in keys if len(k.split()) >= SENTENCE_WORDS))

    def add(self, reply: str) -> None:
        self._replies.append(reply)
        start = normal(opening(reply))
        if self._asking and len(start.split()) >= MIN_WORDS:
            self._answers.setdefault(self._asking, []).append(start)
            if len(self._answers) > ASKED:
                del self._answers[next(iter(self._answers))]
        # A short reply said again whole is a copy too: the 0.5B model answered news after
        # news with the same two-word goodbye.
        if len(start.split()) >= MIN_WORDS or len(normal(reply).split()) >= SHORT_WORDS:
            self._openings.append(start)
            self._ownable.append((start, terms(start)))
        cut = lead(reply)
        if cut is not None:
            self._openings.append(normal(cut))
        long = (normal(sentence) for sentence in sentences(reply))
        self._ownable.extend(
            (key, terms(key)) for key in long if len(key.split()) >= SENTENCE_WORDS
        )

    def openings(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self._openings))
