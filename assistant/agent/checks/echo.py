"""The user's own words, said back to them, in their person turned to the assistant's.

Told a piece of news, the 0.5B model often says it back in the user's words, first person
and all: "Lovely to hear that you sold the boat and I'm buying a caravan", "Great, I'm a nurse
at the clinic.", "... after the race, my fastest yet." Such a reply speaks as the user.
Wherever a first-person word of the reply sits in a run of three words the user just said (the
word itself, the two before it or the two after it), it is the user's word, and it is turned
to the second person as it streams: "and you're buying a caravan". The assistant speaking of
itself ("I'm glad", "I hope", "I'll") is left as it is where only the word and those after it
are the user's (they may have said "I'm glad" too).

The model also says back what the user told it turns before ("You told me that my cousin
Ottilie farms geese"): a run of their earlier words counts too where it holds a word that says
something (not only "I'm going to", which the assistant says of itself as well). Where a
sentence turned the user's "I", the "you" of their words in it is the assistant: "I told you"
said back is "You told me".
"""

from __future__ import annotations

import re
from typing import Self

from assistant.agent.checks.check import Check, Seen, Verdict
from assistant.agent.checks.perspective import AFTER_I, OWN_VOICE
from assistant.agent.checks.text import BACK, SENTENCE_END, SWAPS, straight, turned_back
from assistant.agent.reply_form import ReplyForm
from assistant.agent.told import STOP_WORDS

# How many of the user's words in a row make a run the reply took from them: of the message
# answered, and of one before it (where three in a row are often the assistant's own too:
# "I'm going to").
RUN = 3
EARLIER_RUN = 4
_PIECE = re.compile(r"[A-Za-z'\u2019]+|[^A-Za-z'\u2019]+")


# "I", "I'm", "I'll", ... compare as one word: the model says the user's "I'm joining" back
# as "I'll be joining".
_I_FORMS = frozenset(("i", "i'm", "im", "i'll", "i'd", "i've"))


def _key(word: str) -> str:
    key = straight(word).lower()
    return "i" if key in _I_FORMS else key


def runs_of(words: str, length: int = RUN, saying: bool = False) -> frozenset[tuple[str, ...]]:
    """Every run of ``length`` words in a row in ``words``, as compared (``saying``: only
    those with a word that says something)."""
    keys = [_key(word) for word in re.findall(r"[A-Za-z'\u2019]+", words)]
    runs = (tuple(keys[i : i + length]) for i in range(len(keys) - length + 1))
    return frozenset(
        run for run in runs if not saying or any(word not in STOP_WORDS for word in run)
    )


class EchoTurn(Check):
    """Feed it a reply's text as it streams; it returns what to show now."""

    name = "echo"

    def __init__(self, heard: str, earlier: tuple[str, ...] = ()) -> None:
        """``earlier``: what the user said before ``heard``."""
        self._runs = runs_of(heard).union(
            *(runs_of(said, EARLIER_RUN, saying=True) for said in earlier)
        )
        self._longest = EARLIER_RUN if earlier else RUN
        # Armed only where the user said something in the first person.
        self.armed = any(word in SWAPS for run in self._runs for word in run)
        self.changed = False
        self._held = ""
        # The current sentence's words so far (as compared), and whether its last one that
        # was first person was turned (the verb after a turned "I" follows it), and whether
        # any was.
        self._words: list[str] = []
        self._turned_i = False
        self._turned = False

    @classmethod
    def for_step(cls, form: ReplyForm, seen: Seen) -> Self:
        earlier = seen.said[:-1] if seen.said and seen.said[-1] == seen.heard else seen.said
        return cls(seen.heard, earlier)

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
                    self._words, self._turned_i, self._turned = [], False, False
                used += len(piece)
                continue
            after = [_key(word) for word in words[index + 1 : index + self._longest]]
            if self._turnable(piece) and len(after) < self._longest - 1 and not final:
                break  # its run is not yet written
            out.append(self._turn(piece, after))
            used += len(piece)
            index += 1
        self._held = self._held[used:]
        return "".join(out)

    def _turn(self, word: str, after: list[str]) -> str:
        said = straight(word).lower()
        key = _key(word)
        before = self._words[-(self._longest - 1) :]
        self._words.append(key)
        if self._turned_i and key in AFTER_I:
            self._turned_i = False
            return AFTER_I[key]
        self._turned_i = False
        back = turned_back(said, before[-1] if before else None) if self._turned else None
        swap = SWAPS.get(said) or back
        if swap is None:
            return word
        took = self._echoes(before, key, after)
        # Only the word and those after it as the user said them: the assistant may say
        # "I'm glad you ..." in its own voice as the user did.
        if took is None or (took == 0 and OWN_VOICE.match(" ".join([said, *after]))):
            return word
        self.changed = self._turned = True
        self._turned_i = said == "i"
        return swap[0].upper() + swap[1:] if len(self._words) == 1 else swap

    def _turnable(self, word: str) -> bool:
        """Whether ``word`` may be turned, once the words after it show its run."""
        said = straight(word).lower()
        return said in SWAPS or (self._turned and said in BACK)

    def _echoes(self, before: list[str], key: str, after: list[str]) -> int | None:
        """Where the earliest run of the user's words around the word starts, counted from
        the word (0: at it, -1: the word before), if any does."""
        around = [*before, key, *after]
        at = len(before)
        return next(
            (
                start - at
                for length in (RUN, EARLIER_RUN)
                for start in range(max(0, at - length + 1), at + 1)
                if start + length <= len(around)
                and tuple(around[start : start + length]) in self._runs
            ),
            None,
        )
