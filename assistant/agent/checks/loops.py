"""A message never says the same sentence twice, and one going round in a loop is stopped.

The 0.5B model now and then writes one sentence over and over until the token cap: a
condolence dozens of times in reply to a plain introduction (docs/BENCHMARKS.md,
"Judgement"), or, at temperature 0, one sentence about a person's work again and again in
answer to a question about it. While the sentence being written could still turn out to be
one already said, it is held back; one that does is dropped, so the user sees and hears each
sentence once. The third time the same sentence comes, the reply is stopped there (the server
stops writing it). A sentence after the first that an earlier reply said is dropped too: deep
in a conversation the 0.5B model closed many replies with the same question. An answer owned
as said before ("As I said, ...": opening.py) says an earlier reply's sentences on purpose: the
sentence after its lead-in's is part of its opening too.

A loop inside one sentence is stopped too: a run of words said again and again straight after
itself (a list of the same few items round and round, one word over and over), which the
0.5B model writes until its token cap in a long conversation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Self

from assistant.agent.checks.check import Check, Seen, Verdict
from assistant.agent.checks.opening import owned
from assistant.agent.checks.recent import SENTENCE_WORDS
from assistant.agent.checks.text import CHEER_WORDS, ENDS, compared, normal
from assistant.agent.reply_form import ReplyForm
from assistant.agent.routing import is_question

SAID_AT_MOST = 2
# Shorter sentences are let through as often as they come: "Dr." and "a.m." end like
# sentences, and "Yes." may well be said twice.
MIN_WORDS = 3
# The longest run of words looked for going round, and how many times in a row a run of each
# length is let through: a long run said twice straight after itself is already a loop; one
# word may come three times ("very, very, very") but not four.
LONGEST_RUN = 16
RUN_TIMES = {1: 3, 2: 2, 3: 2, 4: 2}
LONG_RUN_TIMES = 1


def goes_round(words: list[str]) -> bool:
    """Whether the last words are a run said more times in a row than it may be."""
    for length in range(1, LONGEST_RUN + 1):
        times = RUN_TIMES.get(length, LONG_RUN_TIMES) + 1
        if len(words) < length * times:
            break
        run = words[-length:]
        if all(words[-length * (n + 1) : len(words) - length * n] == run for n in range(times)):
            return True
    return False


class LoopStop(Check):
    """Feed it the text of a message, piece by piece; it returns what may be shown now.
    ``looping`` once a sentence came a third time; ``dropped`` once a repeat was held back."""

    name = "loops"

    def __init__(
        self, earlier: Iterable[str] = (), openings: Iterable[str] = (), asked: bool = False
    ) -> None:
        """``earlier``: sentences of earlier replies, not said again after the first;
        ``openings``: those of earlier replies (a short reply's whole); ``asked``: whether the
        reply answers a question."""
        self.looping = False
        self.dropped = False
        # Compared word for word, marks aside (text.compared).
        keys = (compared(sentence, whole=True) for sentence in earlier)
        self._earlier = {key for key in keys if len(key.split()) >= SENTENCE_WORDS}
        self._first = True  # the sentence being written is the message's first
        self._said: Counter[str] = Counter()
        self._sentence = ""  # the sentence being written
        self._held = ""  # its part not shown yet: it could still be a repeat
        self._released = False  # it parted from every sentence said, so it is new
        self._word = ""  # the word being written
        self._words: list[str] = []  # the last words written, as compared
        self._shown_words = 0  # about how many words were shown (a word split across pieces
        # counts twice: enough to tell a cheer alone)
        self._spare = ""  # an earlier reply's sentence left out, said if nothing else is
        self._shown = ""  # what was shown, while it could be a cheer alone
        self._openings = {compared(start, whole=True) for start in openings}
        self._asked = asked

    @classmethod
    def for_step(cls, form: ReplyForm, seen: Seen) -> Self:
        return cls(seen.recent.sentences(), seen.recent.openings(), is_question(seen.heard))

    @property
    def verdict(self) -> Verdict:
        if self.looping:
            return Verdict.STOP
        return Verdict.TRIM if self.dropped else Verdict.PASS

    def reason(self) -> str:
        if self.looping:
            return "the message went round in a loop"
        return "a sentence said before was left out" if self.dropped else ""

    def feed(self, piece: str) -> str:
        shown = ""
        for char in piece:
            if self.looping:  # what follows the stop is not said
                break
            shown += self._take(char)
        self._shown_words += len(shown.split())
        if self._shown_words <= CHEER_WORDS:
            self._shown += shown
        return shown

    def flush(self) -> str:
        """What is held at the end of the message (a last sentence cut short, or one that
        only began like an earlier one); nothing if it repeats one whole or the loop stopped."""
        self._end_word()
        if self.looping:
            self.dropped = True
            return ""
        held, self._held = self._held, ""
        if self._is_repeat():
            self.dropped, held = True, ""
            if self._said[compared(self._sentence)] == 0:  # an earlier reply's
                self._spare = self._spare or self._sentence
        # A reply that would be a cheer alone says an earlier reply's sentence after all where
        # it answers a question (asked again after a copy, the 0.5B model opened willingly
        # and went on with the answer said before, and "Well." was all the user got) or
        # where the cheer was itself a whole earlier reply. Otherwise a new cheer stands
        # alone: the 0.5B model, deep in a conversation, met each message with a cheer and
        # the same sentence after it, which kept in the window came again and again.
        cheer = compared(self._shown + held, whole=True)
        alone = self._shown_words + len(held.split()) <= CHEER_WORDS
        said_before = cheer in self._openings or not cheer.strip()
        if self._spare and alone and (self._asked or said_before):
            held, self._spare = held + self._spare, ""
        return held

    def _take(self, char: str) -> str:
        if char.isspace():
            self._end_word()
            if self.looping:
                return ""
        else:
            self._word += char
        if char.isspace() and self._sentence.rstrip().endswith(tuple(ENDS)):
            return self._end(char)
        self._sentence += char
        if self._released:
            return char
        self._held += char
        opening = compared(self._sentence)
        if any(said.startswith(opening) for said in self._known()):
            return ""
        self._released = True
        held, self._held = self._held, ""
        return held

    def _end_word(self) -> None:
        word = normal(self._word).strip(".,;:!?\"'()*-")
        self._word = ""
        if word:
            self._words = [*self._words[-LONGEST_RUN * 4 :], word]
            self.looping |= goes_round(self._words)

    def _end(self, space: str) -> str:
        """The sentence ended (``space`` follows it): shown unless it repeats one."""
        key = compared(self._sentence)
        repeat = self._is_repeat()
        if len(key.split()) >= MIN_WORDS:
            self._said[key] += 1
            self.looping |= self._said[key] > SAID_AT_MOST
        held, sentence = self._held, self._sentence
        self._first = self._first and owned(normal(sentence))
        self._sentence, self._held, self._released = "", "", False
        self._words = []  # a sentence said again is the sentence check's to judge
        if repeat:
            self.dropped = True
            if not self._said[key] > 1:  # an earlier reply's, not one of this reply's
                self._spare = self._spare or sentence + space
            return ""
        return held + space

    def _known(self) -> Iterable[str]:
        """The sentences the one being written may not repeat."""
        return self._said if self._first else [*self._said, *self._earlier]

    def _is_repeat(self) -> bool:
        key = compared(self._sentence)
        earlier = not self._first and key in self._earlier
        return not self._released and (self._said[key] > 0 or earlier)
