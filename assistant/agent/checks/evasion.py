"""An answer to what the user told says what they told.

Asked about something the user told of, with their words quoted just above the question
(told.py), the 0.5B model often answers around it: it says it is glad to have been told, says
the question back with a word changed, or speaks of itself. Such a reply holds none of the
words that answer the question, the words of what was told that the question does not hold
itself (told.answering_words). So the reply is held until such a word comes, or until a
sentence of some length has ended without one: then it is asked for again, held to say what
the user told ("You told me that ...", step_request.py). A short opening ("Sure!") is held
with what follows it, so nothing of an evasive reply has been shown when it is asked again.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Self

from assistant.agent.checks.check import HoldingCheck, Seen, Verdict
from assistant.agent.checks.text import SENTENCE_END
from assistant.agent.reply_form import ReplyForm
from assistant.agent.told import answering_words, terms, told_answer

# A sentence of at least this many words that names nothing told is an evasive answer; a
# shorter one may be an opening before the answer ("Of course!").
MIN_WORDS = 4


class EvasiveAnswer(HoldingCheck):
    """Feed it the text of one reply as it streams; it returns what may be shown now."""

    name = "evasion"

    def __init__(self, answering: frozenset[str] = frozenset()) -> None:
        """``answering``: the words of what was told that answer the question (nothing
        disarms it)."""
        self._answering = answering
        self._held = ""
        self._open = not answering
        self.evaded = False

    @classmethod
    def for_step(cls, form: ReplyForm, seen: Seen) -> Self:
        """Armed for a first answer about what the user told (not one already asked again to
        say it, or to admit it does not know)."""
        if not form.grounded or form.recalling or form.admitting:
            return cls()
        told = told_answer(seen.heard, seen.said, seen.human)
        return cls(frozenset(answering_words(seen.heard, told)))

    def feed(self, piece: str) -> str:
        if self._open or self.evaded:
            return "" if self.evaded else piece
        self._held += piece
        whole_words, _, _ = self._held.rpartition(" ")  # the last word may be cut short
        if self._answering & terms(whole_words):
            return self._release()
        sentences = SENTENCE_END.split(self._held)[:-1]  # the last has not ended yet
        if any(len(sentence.split()) >= MIN_WORDS for sentence in sentences):
            self.evaded = True
        return ""

    def flush(self) -> str:
        if self._open or self.evaded:
            return "" if self.evaded else self._release()
        if self._answering & terms(self._held):
            return self._release()
        self.evaded = True
        return ""

    @property
    def verdict(self) -> Verdict:
        return Verdict.REASK if self.evaded else Verdict.PASS

    def reasked(self, form: ReplyForm) -> ReplyForm:
        return replace(form, recalling=True)

    def reason(self) -> str:
        if not self.evaded:
            return ""
        return f"the answer said nothing of what the user told: {self._held.strip()!r}"
