"""A question about the user's life said back as its own answer.

Asked what, when, where or who of something the user told it, the 0.5B model often turns the
question into a statement and stops there: the question's own words, nothing they did not
already say. Such a reply tells the user nothing, though the answer was in the prompt. The
reply's first sentence is held while every word it says that says something is one of the
question's; the first word that is not lets it through. A first sentence that ends with none
but the question's words is not shown, and the reply is asked for again, held to a willing
opening that does not begin like it.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Self

from assistant.agent.checks.check import HoldingCheck, Seen, Verdict
from assistant.agent.checks.opening import without_lead_in
from assistant.agent.checks.text import SENTENCE_END, normal
from assistant.agent.reply_form import ReplyForm
from assistant.agent.told import terms

# A pronoun with a verb run into it ("you'll", "it's"): the question has the pronoun alone.
_CONTRACTED = re.compile(r"\b(you|we|they|he|she|it)['\u2019](?:ll|re|ve|d|s)\b", re.I)
# A question that asks for a fact (not one answered yes or no).
_ASKS_FOR_A_FACT = re.compile(r"^\W*(?:what|when|where|who|whom|whose|which|why|how)\b", re.I)


class RestatedQuestion(HoldingCheck):
    """Feed it a reply's text as it streams; it returns what may be shown now."""

    name = "restated"

    def __init__(self, question: str) -> None:
        """``question``: the user's, or "" (disarmed)."""
        self._asked = terms(question) if _ASKS_FOR_A_FACT.match(question) else set()
        self._open = not self._asked
        self._held = ""
        self.restated: str | None = None

    @classmethod
    def for_step(cls, form: ReplyForm, seen: Seen) -> Self:
        # A re-ask is held to a willing opening: this check does not ask twice.
        return cls(seen.heard if form.grounded and not form.willing else "")

    def feed(self, piece: str) -> str:
        if self.restated is not None:
            return ""
        if self._open:
            return piece
        self._held += piece
        end = SENTENCE_END.search(self._held)
        if end is None:
            said = _says(re.sub(r"[\w'\u2019-]+$", "", self._held))  # the last word may be cut
            return "" if said is not None and said <= self._asked else self._release()
        sentence = self._held[: end.start() + 1]
        if self._restates(sentence):
            self.restated = normal(sentence)
            return ""
        return self._release()

    def flush(self) -> str:
        """At the end of the reply: a held sentence that says the question back is not shown."""
        if not self._open and self._restates(self._held):
            self.restated = normal(self._held)
        return "" if self.restated is not None else self._release()

    def _restates(self, sentence: str) -> bool:
        said = _says(sentence) or set()
        return bool(said) and said <= self._asked

    @property
    def verdict(self) -> Verdict:
        return Verdict.REASK if self.restated is not None else Verdict.PASS

    def reasked(self, form: ReplyForm) -> ReplyForm:
        assert self.restated is not None
        return replace(form, willing=True, avoiding=(*form.avoiding, self.restated))

    def reason(self) -> str:
        return f"the reply said the question back: {self.restated!r}" if self.restated else ""


def _says(text: str) -> set[str] | None:
    """The words of ``text`` that say something, compared as the question's are (after a
    lead-in owning it as said before: "As I said, ..."); None where it gives a number."""
    said = _CONTRACTED.sub(r"\1", without_lead_in(text))
    return None if re.search(r"\d", said) else terms(said)
