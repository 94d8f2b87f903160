"""A note of the prompt said back as the reply.

The prompt tells the model who it is and what happened in words meant for it alone: the
instructions, the persona block, the framing of an event ("No one spoke. What changed since you
last looked"), a tool's result. With few memories in view, the 0.5B model answered a question
about what it knew with its persona block, word for word, and a user's message with the framing
of a heartbeat before it. A reply is held while its words, from any word on, could still be a
run of ``NOTE_WORDS`` words of those notes; one that is, is a note said back. At the reply's
opening it is never shown and the reply is asked for again, held to a willing opening that does
not begin like the note; after something was shown, the reply stops before it.

Words the model may well say back are no notes: what the user said, the memories and the
summary shown, what the core memory holds of the user, the items a heartbeat lists, the outcome
of a task, a reply the instructions give as an example. A run found there as well is let
through. Words are compared in one person ("you're" and "I am" alike, "the user's" as "your"):
the model turns a note to speak of itself or to the user.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Self

from assistant.agent.checks.check import Check, Seen, Verdict
from assistant.agent.checks.opening import COPY_REASKS
from assistant.agent.checks.text import normal, straight
from assistant.agent.context import SUMMARY_HEAD
from assistant.agent.reply_form import ReplyForm
from assistant.llm.messages import Message

# How many words in a row of a note make a reply that says it back. Five were found in
# ordinary replies ("let me know if you") that an instruction also says.
NOTE_WORDS = 6
# A line of a system message that lists a thing the model was shown (a memory, a heartbeat's
# numbered item) rather than telling it what to do.
_ITEM = re.compile(r"^\s*(?:-|\d+\.)\s")
# A line that tells of an event with its content after the tag: a task's outcome, a fired
# reminder's words.
_CONTENT_TAG = re.compile(r"^\s*\[(?:task|reminder)\b[^\]]*\]\s*")
# A reply written as an example, in the JSON a step writes: words the model is shown to say
# ("I don't know, you haven't told me"), not a note about what to do.
_EXAMPLE_REPLY = re.compile(r'"message": "((?:[^"\\]|\\.)*)"')
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_CONTRACTIONS = (("n't", " not"), ("'re", " are"), ("'m", " am"), ("'ll", " will"))
# One person for all: "I am", "you're" and "we are" compare alike.
_PERSON = {
    "i": "you",
    "me": "you",
    "we": "you",
    "us": "you",
    "my": "your",
    "our": "your",
    "their": "your",
    "mine": "yours",
    "myself": "yourself",
    "am": "are",
    "is": "are",
}


def note_words(text: str) -> list[tuple[str, int]]:
    """The words of ``text`` as compared, each with where the word it comes from starts."""
    keys: list[tuple[str, int]] = []
    for match in _WORD.finditer(straight(text).lower()):
        word = match.group(0)
        if keys and keys[-1][0] == "the" and word in ("user", "user's"):
            keys.pop()
            word = "you" if word == "user" else "your"
        for contraction, full in _CONTRACTIONS:
            if word.endswith(contraction):
                word = word[: -len(contraction)] + full
                break
        for part in word.split():
            keys.append((_PERSON.get(part, part), match.start()))
    return keys


def _runs(text: str) -> set[tuple[str, ...]]:
    keys = [key for key, _ in note_words(text)]
    return {tuple(keys[i : i + NOTE_WORDS]) for i in range(len(keys) - NOTE_WORDS + 1)}


def prompt_notes(messages: Sequence[Message], human: str) -> tuple[str, str]:
    """The prompt's ``messages`` split into what tells the model (its notes) and what it was
    told of the user's world (``human``, the core memory's user block, among it)."""
    notes: list[str] = []
    facts: list[str] = [human]
    for message in messages:
        content = message["content"]
        if message["role"] != "system" or content.startswith(SUMMARY_HEAD):
            facts.append(content)
            continue
        facts += _EXAMPLE_REPLY.findall(content)
        for line in (content.replace(human, "") if human else content).splitlines():
            tag = _CONTENT_TAG.match(line)
            if tag is not None:
                notes.append(line[: tag.end()])
                facts.append(line[tag.end() :])
            else:
                (facts if _ITEM.match(line) else notes).append(line)
    return "\n".join(notes), "\n".join(facts)


class NoteBack(Check):
    """Feed it the text of one reply as it streams; it returns what may be shown now."""

    name = "notes"

    def __init__(self, notes: str, facts: str = "", may_reask: bool = True) -> None:
        self._runs = _runs(notes) - _runs(facts)
        self._starts = {run[:length] for run in self._runs for length in range(1, NOTE_WORDS)}
        self._may_reask = may_reask
        self._held = ""  # the reply from the earliest word a note could start at, not shown
        self._shown = False  # whether any word of the reply was shown
        # The note the reply said back (its opening, in normal form).
        self.note: str | None = None

    @classmethod
    def for_step(cls, form: ReplyForm, seen: Seen) -> Self:
        return cls(seen.notes, seen.facts, may_reask=len(form.avoiding) < COPY_REASKS)

    @property
    def verdict(self) -> Verdict:
        if self.note is None:
            return Verdict.PASS
        return Verdict.REASK if self._may_reask and not self._shown else Verdict.STOP

    def reason(self) -> str:
        return f"a note of the prompt was said back: {self.note!r}" if self.note else ""

    def reasked(self, form: ReplyForm) -> ReplyForm:
        avoiding = (*form.avoiding, self.note) if self.note is not None else form.avoiding
        return replace(form, willing=True, avoiding=avoiding)

    def feed(self, piece: str) -> str:
        if not self._runs or self.note is not None:
            return piece if self.note is None else ""
        self._held += piece
        return self._release(final=False)

    def flush(self) -> str:
        if self.note is not None:
            return ""
        return self._release(final=True)

    def _release(self, final: bool) -> str:
        """What of the held text is shown: all of it before the earliest word that could still
        begin a note (the last word too while it may be cut short)."""
        words = note_words(self._held)
        if not final and words and _open_word(self._held):
            cut = words[-1][1]
            words = [word for word in words if word[1] < cut]
        else:
            cut = len(self._held)
        keys = [key for key, _ in words]
        for index in range(len(keys) - NOTE_WORDS + 1):
            if tuple(keys[index : index + NOTE_WORDS]) in self._runs:
                self.note = normal(self._held[words[index][1] :])
                shown, self._held = self._held[: words[index][1]], ""
                return self._show(shown)
        if not final:
            for index in range(max(0, len(keys) - NOTE_WORDS + 1), len(keys)):
                if self._may_begin(tuple(keys[index:])):
                    cut = words[index][1]
                    break
        shown, self._held = self._held[:cut], self._held[cut:]
        return self._show(shown)

    def _may_begin(self, ahead: tuple[str, ...]) -> bool:
        """Whether ``ahead``, the last words written, may begin a note (a last "the" may
        become "your" with the word after it: "the user's")."""
        if ahead[-1] == "the":
            return len(ahead) == 1 or ahead[:-1] in self._starts
        return ahead in self._starts

    def _show(self, text: str) -> str:
        self._shown |= any(char.isalnum() for char in text)
        return text


def _open_word(text: str) -> bool:
    """Whether ``text`` ends inside a word (it may go on in the next piece)."""
    return bool(text) and (text[-1].isalnum() or text[-1] in "'\u2019")
