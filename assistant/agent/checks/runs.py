"""A run of words copied into the reply: a note of the prompt, or an earlier reply's.

The prompt tells the model who it is and what happened in words meant for it alone: the
instructions, the persona block, the framing of an event ("No one spoke. What changed since you
last looked"), a tool's result. With few memories in view, the 0.5B model answered a question
about what it knew with its persona block, word for word, and a user's message with the framing
of a heartbeat before it. ``NOTE_WORDS`` words in a row of those notes are a note said back.

Deep in a conversation the same model fills one template reply after reply ("I'm glad to hear
that you're <the user's words>") and carries one phrase of an earlier reply into answers about
anything ("... can be a great way to <the same eleven words>"). ``REPLY_WORDS`` words in a row
of a recent reply are a copy, unless the reply owns an answer said again ("As I said, ...":
opening.py).

In the reply's first sentence, the text is held while its words, from any word on, could still
be a note said back (with the words before it, if it may begin among the first few): one that
is, at the opening,
is never shown and the reply is asked for again, held to a willing opening that does not begin
like it; after words were shown, the reply stops before it. A later sentence is held whole and
left out if it holds a note or an earlier reply's run, and the reply goes on (so no sentence is
cut in half). An earlier reply's run in the first sentence is left to the opening guard: asked
again for one, the 0.5B model wrote greetings to people in the memories and cheers alone. A
reply that would be a cheer alone ("Great!") says the sentence left out after all; on a re-ask,
whose opening is a willing word, a short first sentence waits for the next, and where nothing
but it would be left the reply is asked again.

Words the model may well say again are no copy: what the user said, the memories and the
summary shown, what the core memory holds of the user, the items a heartbeat lists, the outcome
of a task, a reply the instructions give as an example. A run found there as well is let
through; one across a note and a fact, or taking in a memory's date, is the prompt's layout
said back (at floor 0.4 the 0.5B model went on after its answer with "human now reads: Name:
..." and with a memory line, date and all), and so is a memory's date as the prompt writes it,
"(2026-05-01)", however short the line it opens. Words are compared in one person ("you're"
and "I am" alike) and without articles, possessives or "the user": the model turns a note to
speak of itself or to the user.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Self

from assistant.agent.checks.check import Check, Seen, Verdict
from assistant.agent.checks.opening import COPY_REASKS, lead_in, owned, without_lead_in
from assistant.agent.checks.text import CHEER_WORDS, SENTENCE_END, normal, straight
from assistant.agent.context import ASSISTANT_SPEAKER, CORE_RESTATED, SUMMARY_HEAD, USER_SPEAKER
from assistant.agent.reply_form import ReplyForm
from assistant.llm.messages import Message

# How many words in a row of a note make a reply that says it back. Five were found in
# ordinary replies ("let me know if you") that an instruction also says.
NOTE_WORDS = 6
# How many words in a row of a recent reply make a copy (as compared: "I'm" is two): a
# template's fixed part ("I'm glad to hear that you're") is eight.
REPLY_WORDS = 8
# A note that may begin among a reply's first words holds those words with it: begun after
# them, it would leave them shown, cut off ("You're" alone).
HOLD_WORDS = 3
# A line of a system message that lists a thing the model was shown (a memory, with the day
# it was written, or a heartbeat's numbered item) rather than telling it what to do.
_ITEM = re.compile(r"^\s*(?:-|\d+\.)\s+(?:\((?:\d{4}-\d{2}-\d{2}|today|yesterday)\)\s*)?")
# A line that tells of an event with its content after the tag: a task's outcome, a fired
# reminder's words.
_CONTENT_TAG = re.compile(r"^\s*\[(?:task|reminder)\b[^\]]*\]\s*")
# The day a memory line of the prompt was written, as the prompt shows it: no reply writes
# it so (the 0.5B model went on after an answer with a memory line, date and all), and one
# being written.
_DATED = re.compile(r"\((?:\d{4}-\d{2}-\d{2}|today|yesterday)\)")
_DAY_BEGUN = "|".join(day[:end] for day in ("today", "yesterday") for end in range(1, len(day) + 1))
_DATE_BEGUN = re.compile(rf"\((?:\d[\d-]{{0,9}}|{_DAY_BEGUN})$")
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

# Words left out of the comparison: the model says a note back with its articles,
# possessives and "user" changed ("You're a Brain OS user, a personal assistant on your
# computer" for "You are Brain OS, the user's personal assistant on their computer"). "The
# user" is whom a reply calls "you", and compares so: left out, a note's run lost a word.
_UNWEIGHED = frozenset(("a", "an", "the", "your", "user", "user's"))

Run = tuple[str, ...]


def run_words(text: str) -> list[tuple[str, int]]:
    """The words of ``text`` as compared, each with where the word it comes from starts."""
    keys: list[tuple[str, int]] = []
    prior = ""
    for match in _WORD.finditer(straight(text).lower()):
        word, after_the = match.group(0), prior == "the"
        prior = word
        if word == "user" and after_the:
            keys.append(("you", match.start()))
            continue
        for contraction, full in _CONTRACTIONS:
            if word.endswith(contraction):
                word = word[: -len(contraction)] + full
                break
        for part in word.split():
            key = _PERSON.get(part, part)
            if key not in _UNWEIGHED:
                keys.append((key, match.start()))
    return keys


def _runs(texts: Iterable[str], length: int) -> set[Run]:
    found: set[Run] = set()
    for text in texts:
        keys = [key for key, _ in run_words(text)]
        found.update(tuple(keys[i : i + length]) for i in range(len(keys) - length + 1))
    return found


def prompt_notes(messages: Sequence[Message], human: str) -> tuple[str, str]:
    """What the prompt's ``messages`` tell the model, laid out as they are (its notes), and
    what they told it of the user's world (``human``, the core memory's user block, among it):
    a run of the notes found in the facts too is no note, one across a framing and a fact, or
    a memory's date, is the prompt's layout said back."""
    notes: list[str] = []
    facts: list[str] = [human]
    for message in messages:
        content = message["content"]
        if message["role"] == "assistant":  # what the model said is no fact it was told
            continue
        if message["role"] == "user":
            facts.append(content)
            continue
        if content.startswith(SUMMARY_HEAD):
            # The summary is what happened; a core block restated after it is framed as a
            # note ("[core memory] human now reads:"), which the 0.5B model said back.
            summary, framed, restated = content.partition(f"\n\n{CORE_RESTATED}")
            facts.append(summary)
            if framed:
                notes.append(framed + restated)
            continue
        notes.append(content)
        facts += _EXAMPLE_REPLY.findall(content)
        for line in content.splitlines():
            tag = _CONTENT_TAG.match(line) or _ITEM.match(line)
            # A memory of what the model itself said is no fact it was told: shown, the
            # 0.5B model's earlier sentences were copied into reply after reply.
            if tag is not None and not line[tag.end() :].startswith(f"{ASSISTANT_SPEAKER}:"):
                facts.append(line[tag.end() :])
    return "\n".join(notes), "\n".join(facts)


def remembered_user_words(messages: Sequence[Message]) -> tuple[str, ...]:
    """What the user said in the memories the prompt's system messages show (a memory line
    of their words), in the order shown: the 0.5B model says such a line back as its own, as
    it does the user's words in the window."""
    said: list[str] = []
    for message in messages:
        if message["role"] != "system":
            continue
        for line in message["content"].splitlines():
            tag = _ITEM.match(line)
            if tag is not None and line[tag.end() :].startswith(f"{USER_SPEAKER}:"):
                said.append(line[tag.end() + len(USER_SPEAKER) + 1 :].strip())
    return tuple(said)


class CopiedRun(Check):
    """Feed it the text of one reply as it streams; it returns what may be shown now."""

    name = "runs"

    def __init__(
        self,
        notes: str,
        facts: str = "",
        earlier: Sequence[str] = (),
        may_reask: bool = True,
        hold_cheer: bool = False,
    ) -> None:
        """``earlier``: the recent replies, whose runs this one may not copy."""
        self._notes = _runs([notes], NOTE_WORDS) - _runs([facts], NOTE_WORDS)
        self._said = _runs(earlier, REPLY_WORDS) - _runs([facts], REPLY_WORDS)
        # Only a note is looked for in the first sentence: an earlier reply's run found there
        # was asked again, and the 0.5B model's re-asks wrote greetings to people in the
        # memories ("Good morning, Caroline!") and cheers alone.
        self._starts = {run[:length] for run in self._notes for length in range(1, len(run))}
        self._may_reask = may_reask
        self._fed = ""  # all of the reply so far (whether it owns an answer said again)
        self._held = ""  # what is not shown yet
        self._first = True  # the sentence being written is the reply's first
        self._shown = False  # whether any word of the reply was shown
        # The copy the reply is asked again or stopped for (from its start, in normal form).
        self.copied: str | None = None
        self.dropped = False  # a later sentence holding one was left out
        self._left_out = ""  # the first such sentence
        self._shown_words = 0
        # On a re-ask the reply opens with a willing word, and the 0.5B model went on with the
        # copy it was asked again for: a short first sentence is held until what follows it
        # is judged, so that a cheer is never all that is left.
        self._hold_cheer = hold_cheer
        self._cheer = ""

    @classmethod
    def for_step(cls, form: ReplyForm, seen: Seen) -> Self:
        # An answer held to say what the user told says it as an earlier reply may have
        # (one about them as a whole, or the same question asked before): no copy of it.
        earlier = [] if form.recalling else seen.recent.sentences()
        may_reask = len(form.avoiding) < COPY_REASKS
        return cls(seen.notes, seen.facts, earlier, may_reask, hold_cheer=form.willing)

    @property
    def verdict(self) -> Verdict:
        if self.copied is not None:
            return Verdict.REASK if self._may_reask and not self._shown else Verdict.STOP
        return Verdict.TRIM if self.dropped else Verdict.PASS

    def reason(self) -> str:
        if self.copied is not None:
            return f"the reply copied a note of the prompt or an earlier reply: {self.copied!r}"
        return "a sentence copying a note or an earlier reply was left out" if self.dropped else ""

    def reasked(self, form: ReplyForm) -> ReplyForm:
        avoiding = (*form.avoiding, self.copied) if self.copied is not None else form.avoiding
        return replace(form, willing=True, avoiding=avoiding)

    def feed(self, piece: str) -> str:
        if self.copied is not None or not (self._notes or self._said):
            return "" if self.copied is not None else piece
        self._fed += piece
        self._held += piece
        return self._release(final=False)

    def flush(self) -> str:
        return "" if self.copied is not None else self._release(final=True)

    def _release(self, final: bool) -> str:
        shown = ""
        while self._held and self.copied is None:
            if self._first:
                # Where the first sentence ends, if it did (the held text ends the reply).
                end = SENTENCE_END.search(self._fed)
                split = end.end() - (len(self._fed) - len(self._held)) if end else None
                if split is None and (final or not self._hold_cheer):
                    shown += self._opened(self._opening(final))
                if split is None:
                    break
                self._first = False
                if split > 0:  # judged whole, then the rest is a later sentence's
                    rest, self._held = self._held[split:], self._held[:split]
                    shown += self._opened(self._opening(final=True))
                    self._held = "" if self.copied else rest
                continue
            end = SENTENCE_END.search(self._held)
            if end is None and not final:
                break
            cut = end.end() if end is not None else len(self._held)
            sentence, self._held = self._held[:cut], self._held[cut:]
            keys = _keys(sentence)
            note = self._copies_at(keys, replies=False) is not None or _DATED.search(sentence)
            if note or self._copies_at(keys, replies=True) is not None:
                self.dropped = True
                # Only an earlier reply's words may be said after all, never the prompt's.
                if not note:
                    self._left_out = self._left_out or sentence
            else:
                shown += self._show(self._cheer + sentence)
                self._cheer = ""
        if final:
            shown += self._last_words()
        return shown

    def _last_words(self) -> str:
        """At the end of the reply: a cheer held on a re-ask with nothing after it but what
        was left out asks for the reply again; else a reply that would be a cheer alone says
        the earlier reply's sentence left out after all (a copy says more than "Great!"
        alone; a note of the prompt is never said)."""
        cheer, self._cheer = self._cheer, ""
        if cheer and self.dropped:
            self.copied = normal(self._left_out or cheer)
            return ""
        shown = self._show(cheer)
        if self.dropped and self._left_out and self._shown_words <= CHEER_WORDS:
            self.dropped, left_out, self._left_out = False, self._left_out, ""
            shown += self._show(left_out)
        return shown

    def _opened(self, text: str) -> str:
        """What is shown of the first sentence's ``text``: on a re-ask, a cheer alone
        ("Sure!") waits for what follows it."""
        if self._hold_cheer and not self._shown and len(text.split()) <= CHEER_WORDS:
            self._cheer += text
            return ""
        return self._show(text)

    def _opening(self, final: bool) -> str:
        """What of the first sentence, held, is shown: all of it before the earliest word that
        could still begin a note said back (the last word too while it may be cut short; and
        the reply's first ``HOLD_WORDS`` words with one that may begin among them)."""
        words = run_words(self._held)
        if not final and words and _open_word(self._held):
            cut = words[-1][1]
            words = [word for word in words if word[1] < cut]
        else:
            cut = len(self._held)
        keys = tuple(key for key, _ in words)
        # An answer owned as said again ("As I said, ..."): its lead-in is no word of the
        # reply's own, and shown alone it said nothing (a copy cut after it left "As I said,").
        held = self._held
        lead = len(_keys(held)) - len(_keys(without_lead_in(held))) if owned(held) else 0
        at = self._copies_at(keys, replies=False)
        start = words[at][1] if at is not None else None
        dated = _DATED.search(self._held)
        if dated is not None and (start is None or dated.start() < start):
            start = dated.start()
        if start is not None:
            if not self._shown and len(_keys(self._held[:start])) < HOLD_WORDS + lead:
                start = 0
            self.copied = normal(self._held[start:])
            shown, self._held = self._held[:start], ""
            return shown
        if not final:
            begun = _DATE_BEGUN.search(self._held)
            cut = min(cut, begun.start()) if begun is not None else cut
            for index in range(max(0, len(keys) - NOTE_WORDS + 1), len(keys)):
                if self._may_begin(keys[index:]):
                    # Begun among the reply's first words: those are held with it.
                    cut = words[index][1] if self._shown or index >= HOLD_WORDS + lead else 0
                    break
            if not self._shown and (lead_in(held) is None or len(keys) <= lead):
                cut = 0  # a lead-in waits for the answer it opens
        shown, self._held = self._held[:cut], self._held[cut:]
        return shown

    def _copies_at(self, keys: Run, replies: bool) -> int | None:
        """Where the first copied run in ``keys`` starts, if any does: a note's, or with
        ``replies`` an earlier reply's too."""
        said = self._said if replies and not owned(self._fed.lstrip()) else set()
        for index in range(len(keys)):
            if keys[index : index + NOTE_WORDS] in self._notes:
                return index
            if keys[index : index + REPLY_WORDS] in said:
                return index
        return None

    def _may_begin(self, ahead: Run) -> bool:
        """Whether ``ahead``, the last words written, may begin a note said back."""
        return ahead in self._starts

    def _show(self, text: str) -> str:
        self._shown |= any(char.isalnum() for char in text)
        self._shown_words += len(text.split())
        return text


def _keys(text: str) -> Run:
    return tuple(key for key, _ in run_words(text))


def _open_word(text: str) -> bool:
    """Whether ``text`` ends inside a word (it may go on in the next piece)."""
    return bool(text) and (text[-1].isalnum() or text[-1] in "'\u2019")
