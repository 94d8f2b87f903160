"""The user's own words, said back to them, in their person turned to the assistant's.

Told a piece of news, the 0.5B model often says it back in the user's words, first person
and all: "Lovely to hear that you sold the boat and I'm buying a caravan", "Great, I'm a nurse
at the clinic.", "... after the race, my fastest yet." Such a reply speaks as the user.
Wherever a first-person word of the reply sits in a run of three words the user just said (the
word itself, the two before it or the two after it), it is the user's word, and it is turned
to the second person as it streams: "and you're buying a caravan". The assistant speaking of
itself ("I'm glad", "I hope", "I'll") is left as it is where only the word and those after it
are the user's (they may have said "I'm glad" too).
"""

from __future__ import annotations

import re
from typing import Self

from assistant.agent.checks.check import Check, Seen, Verdict
from assistant.agent.checks.perspective import AFTER_I, OWN_VOICE
from assistant.agent.checks.text import SENTENCE_END, SWAPS, straight
from assistant.agent.reply_form import ReplyForm

# How many of the user's words in a row make a run the reply took from them.
RUN = 3
_PIECE = re.compile(r"[A-Za-z'\u2019]+|[^A-Za-z'\u2019]+")


# "I", "I'm", "I'll", ... compare as one word: the model says the user's "I'm joining" back
# as "I'll be joining".
_I_FORMS = frozenset(("i", "i'm", "im", "i'll", "i'd", "i've"))


def _key(word: str) -> str:
    key = straight(word).lower()
    return "i" if key in _I_FORMS else key


def runs_of(words: str) -> frozenset[tuple[str, ...]]:
    """Every run of ``RUN`` words in a row in ``words``, as compared."""
    keys = [_key(word) for word in re.findall(r"[A-Za-z'\u2019]+", words)]
    return frozenset(tuple(keys[i : i + RUN]) for i in range(len(keys) - RUN + 1))


class EchoTurn(Check):
    """Feed it a reply's text as it streams; it returns what to show now."""

    name = "echo"

    def __init__(self, heard: str) -> None:
        self._runs = runs_of(heard)
        # Armed only where the user said something in the first person.
        self.armed = any(word in SWAPS for run in self._runs for word in run)
        self.changed = False
        self._held = ""
        # The current sentence's words so far (as compared), and whether its last one that
        # was first person was turned (the verb after a turned "I" follows it).
        self._words: list[str] = []
        self._turned_i = False

    @classmethod
    def for_step(cls, form: ReplyForm, seen: Seen) -> Self:
        return cls(seen.heard)

    @property
    def verdict(self) -> Verdict:
        return Verdict.TRIM if self.changed else Verdict.PASS

    def reason(self) -> str:
        return "the user's own words were turned to speak to them" if self.changed else ""

    def feed(self, piece: str) -> str:
        if not self.armed:
            return piece
        self._held += piece
        return self._release(final=False)

    def flush(self) -> str:
        return self._release(final=True) if self.armed else ""

    def _release(self, final: bool) -> str:
        """What of the held text can be shown: all of it but a first-person word whose
        neighbours are not yet written (and the word being written, which may be cut)."""
        pieces = _PIECE.findall(self._held)
        if not final and pieces and pieces[-1][0].isalpha():
            pieces = pieces[:-1]  # the last word may be cut short
        words = [piece for piece in pieces if piece[0].isalpha()]
        out: list[str] = []
        used = 0
        index = 0  # of the word among ``words``
        for piece in pieces:
            if not piece[0].isalpha():
                out.append(piece)
                if SENTENCE_END.search(piece + " "):
                    self._words, self._turned_i = [], False
                used += len(piece)
                continue
            after = [_key(word) for word in words[index + 1 : index + 1 + RUN - 1]]
            if straight(piece).lower() in SWAPS and len(after) < RUN - 1 and not final:
                break  # its run is not yet written
            out.append(self._turn(piece, after))
            used += len(piece)
            index += 1
        self._held = self._held[used:]
        return "".join(out)

    def _turn(self, word: str, after: list[str]) -> str:
        said = straight(word).lower()
        key = _key(word)
        before = self._words[-(RUN - 1) :]
        self._words.append(key)
        if self._turned_i and key in AFTER_I:
            self._turned_i = False
            return AFTER_I[key]
        self._turned_i = False
        swap = SWAPS.get(said)
        if swap is None:
            return word
        took = self._echoes(before, key, after)
        # Only the word and the two after it as the user said them: the assistant may say
        # "I'm glad you ..." in its own voice as the user did.
        if took is None or (took == len(before) and OWN_VOICE.match(" ".join([said, *after]))):
            return word
        self.changed = True
        self._turned_i = said == "i"
        return swap[0].upper() + swap[1:] if len(self._words) == 1 else swap

    def _echoes(self, before: list[str], key: str, after: list[str]) -> int | None:
        """Where the earliest run of the user's words around the word starts (in ``before``
        then the word), if any does."""
        around = [*before, key, *after]
        at = len(before)
        return next(
            (
                start
                for start in range(max(0, at - RUN + 1), at + 1)
                if start + RUN <= len(around) and tuple(around[start : start + RUN]) in self._runs
            ),
            None,
        )
