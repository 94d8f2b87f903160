"""A reply says no bracketed aside.

Text in square brackets is a stage direction or a placeholder ("[shares a photo: ...]",
"[your name]"), never words to say to the user, and Piper reads it out. Shown memories of
chat logs that carry such markers, the 0.5B model wrote one into reply after reply, each time
with a few words changed (so no copy check matched it). The aside is left out as it streams;
a link written as ``[text](address)`` is kept.
"""

from __future__ import annotations

from typing import Self

from assistant.agent.checks.check import Check, Seen, Verdict
from assistant.agent.reply_form import ReplyForm


class AsideDrop(Check):
    name = "asides"

    def __init__(self) -> None:
        self.dropped = False
        self._held = ""  # an aside being written, from its "[" on
        self._closed = False  # the held aside has ended: a link if "(" follows
        self._last = ""  # the last character shown

    @classmethod
    def for_step(cls, form: ReplyForm, seen: Seen) -> Self:
        return cls()

    def feed(self, piece: str) -> str:
        return "".join(self._take(char) for char in piece)

    def _take(self, char: str) -> str:
        if self._closed:
            held, self._held, self._closed = self._held, "", False
            if char == "(":
                return self._show(held + char)
            self.dropped = True
            # "Nice! [aside] And ..." reads "Nice! And ...", with one space.
            if char.isspace() and (not self._last or self._last.isspace()):
                return ""
        elif self._held:
            self._held += char
            self._closed = char == "]"
            return ""
        elif char == "[":
            self._held = char
            return ""
        return self._show(char)

    def _show(self, text: str) -> str:
        self._last = text[-1]
        return text

    def flush(self) -> str:
        """An aside left open, or closed at the very end, is not said."""
        if self._held:
            self.dropped = True
            self._held, self._closed = "", False
        return ""

    @property
    def verdict(self) -> Verdict:
        return Verdict.TRIM if self.dropped else Verdict.PASS

    def reason(self) -> str:
        return "a bracketed aside was left out" if self.dropped else ""
