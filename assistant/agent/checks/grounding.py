"""An answer about the user's life says nothing it was not told.

Asked first whether what it sees holds the answer (tools.py, ``grounded``), the 1.5B model
at times still says yes and makes one up: a name for someone the user never named, an age
never told, an hour for a trip whose time was never given (docs/BENCHMARKS.md,
"Judgement"). What such an answer adds is a name, a number, a day: words that stand out, and
that a true answer copies from the memories or the conversation. So each sentence of the
answer is held until it ends and checked by code: a name (a capitalised word inside the
sentence) or a number that appears nowhere in the prompt is an invention. One in the first
sentence, and the answer is asked for again, held to admit it does not know; one later, and
the answer ends before that sentence. An admission that goes on to make the answer up ("I
don't know, but ...") ends before the clause that does.

The user's own name is in every prompt, so it passes that test, and the 0.5B model puts it
wherever a name is asked for: as the name of someone the user never named, or as its own. In
an answer to anything but a question about the user's name it counts as made up, unless it
only addresses the user ("Sure, Ilse.").
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Self

from assistant.agent.checks.check import Check, Seen, Verdict
from assistant.agent.checks.opening import UNKNOWING
from assistant.agent.checks.provenance import Sources
from assistant.agent.checks.text import ENDS, LOWER, NAME_WORD, UPPER, normal, straight, words_of
from assistant.agent.reply_form import ReplyForm
from assistant.agent.told import answer_told, user_name

# A sentence longer than this is checked and said in parts of this many words: a first
# sentence that runs on (a long list) would otherwise be held for many seconds. A spoken
# answer's first sentence is shorter (the judgement rule: under about 15 words).
HOLD_WORDS = 20
# What a capitalised word that is no name follows: a sentence's end, or a colon.
_OPENS = (".", "!", "?", ":")
# Which end in a full stop and are followed by a name.
_TITLES = ("Dr.", "Mr.", "Mrs.", "Ms.", "Prof.", "St.")
# A number (a time, a date, an age: "10:00", "26th", "31") or a capitalised word.
_FACT = re.compile(rf"\d[\d:.,/]*(?:st|nd|rd|th)?|{NAME_WORD}(?:['\u2019-][{UPPER}{LOWER}]+)*")
# Where a clause begins: the made-up part of an admission starts at one ("I don't know, but").
_CLAUSE_BREAK = re.compile(r"[,;:\u2014]|\s(?:but|and|so|maybe|perhaps|though|although)\b", re.I)
# A template's blank in place of a fact: asked something it was not told, the 1.5B model
# answered "You work at [insert company name]."
_BLANK = re.compile(r"\[[^\]\n]{1,60}\]")
# A question about the user's own name, or about them as a whole (its answer is theirs).
_ASKS_OWN_NAME = re.compile(
    r"\bmy name\b|\bwho am i\b|\bwhat am i called\b|\bcall me\b|\bmy full name\b|"
    r"\babout me\b",
    re.I,
)
# How a name that only addresses the user stands: after the start, a comma or a greeting, and
# before a mark.
_ADDRESS_BEFORE = re.compile(r"(?:^|,|\b(?:hi|hello|hey|thanks|sorry|dear|bye|well|oh))\s*$", re.I)


def own_name_in(sentence: str, name: str) -> bool:
    """Whether ``sentence`` gives the user's ``name`` as a fact, not only to address them."""
    for match in re.finditer(rf"\b{re.escape(name)}\b", sentence):
        addressed = _ADDRESS_BEFORE.search(sentence[: match.start()]) is not None
        if not (addressed and sentence[match.end() : match.end() + 1] in (",", "!", ".", "?")):
            return True
    return False


def about_what_they_told(question: str, prompt: str) -> bool:
    """Whether the answer to ``question`` must come from what the user told: it is about
    them ("my", "I") or names someone the prompt knows besides the question ("Where does
    Wilhelmina keep her bees?"), not general knowledge about a name ("How tall is
    Kilimanjaro?")."""
    if re.search(r"\b(i|i'm|me|my|mine|we|our|us)\b", straight(question), re.I):
        return True
    known = words_of(prompt.replace(question, " "))
    names = invented(question, set())
    return any(
        re.split("['\u2019]", name.lower())[0] in known for name in names if name[0].isupper()
    )


def facts_in(sentence: str) -> Iterator[tuple[str, str]]:
    """The facts of ``sentence`` (its names past the first word, its numbers), each with its
    base: lower case, without an ordinal's ending."""
    for match in _FACT.finditer(sentence):
        fact = match.group(0).rstrip(".,")
        before = sentence[: match.start()].rstrip(" \"'")
        opens = not before or (before.endswith(_OPENS) and not before.endswith(_TITLES))
        if not fact or (fact[0].isupper() and opens):
            continue  # a sentence's first word is capitalised anyway
        yield fact, re.sub(r"(?<=\d)(st|nd|rd|th)$", "", fact.lower())


def invented(sentence: str, known: set[str]) -> list[str]:
    """The facts of ``sentence`` that are not among the ``known`` words (lower-case); a
    template's blank ("[insert name]") stands for one it did not know."""
    found = _BLANK.findall(sentence)
    for fact, base in facts_in(sentence):
        if fact.lower() not in known and base not in known and base.split("'")[0] not in known:
            found.append(fact)
    return found


class GroundCheck(Check):
    """Feed it an answer's text as it streams; it returns each sentence once it ended and
    holds nothing it was not told. ``invented`` once one did (nothing of it is returned);
    ``cut`` if sentences before it were."""

    name = "grounding"

    def __init__(
        self,
        prompt: str,
        armed: bool = True,
        own_name: str | None = None,
        sources: Sources | None = None,
        question: str = "",
        admitting: bool = False,
        answer_told: bool = False,
    ) -> None:
        """``own_name``: the user's name, where the answer is not about it; ``sources``: the
        lines a fact not in the ``question`` must come from (provenance.py); ``admitting``:
        the answer was asked for again to say it does not know; ``answer_told``: the user's
        own words hold the answer (told.py), which a made-up answer is asked again to say."""
        self.invented: list[str] = []
        self._answer_told = answer_told
        self._admitting = admitting
        self._sources = sources
        self._asked = words_of(question)
        self._own_name = own_name
        self.cut = False
        self._known = words_of(prompt)
        self._armed = armed
        self._sentence = ""
        self._released = False
        # Part of the sentence held now was said already: its first word opens nothing.
        self._midway = False

    @classmethod
    def for_step(cls, form: ReplyForm, seen: Seen) -> Self:
        """Armed for an answer about what the user told (the question names them or someone
        known, or their words hold its answer), not yet held to admit it does not know."""
        recall = form.grounded and answer_told(seen.heard, seen.said, seen.human)
        armed = recall or (form.grounded and about_what_they_told(seen.heard, seen.prompt))
        own = None if _ASKS_OWN_NAME.search(straight(seen.heard)) else user_name(seen.human)
        told = seen.facts or seen.prompt  # no split of the prompt: all of it is told
        sources = Sources(seen.heard, told, seen.human) if armed else None
        return cls(
            seen.prompt,
            armed=armed,
            own_name=own,
            sources=sources,
            question=seen.heard,
            admitting=form.admitting,
            answer_told=recall,
        )

    @property
    def verdict(self) -> Verdict:
        if not self.invented:
            return Verdict.PASS
        return Verdict.STOP if self.cut else Verdict.REASK

    def reasked(self, form: ReplyForm) -> ReplyForm:
        """Held to say what the user told of it where their words hold the answer (asked to
        admit it did not know, the 0.5B model said so of a daughter's name the user had given
        four turns before), else, or when that too made something up, to admit it."""
        if self._answer_told and not form.recalling:
            return replace(form, recalling=True)
        return replace(form, admitting=True, recalling=False)

    def reason(self) -> str:
        return f"the answer said what it was not told {self.invented}" if self.invented else ""

    def feed(self, piece: str) -> str:
        if not self._armed or self.invented:
            return "" if self.invented else piece
        shown = ""
        for char in piece:
            held = self._sentence.rstrip()
            if char.isspace() and (held.endswith(tuple(ENDS)) or _long(held)):
                shown += self._end(char)
            else:
                self._sentence += char
        return shown

    def flush(self) -> str:
        """The last sentence, at the end of the answer (checked like the others)."""
        if not self._armed or self.invented:
            return ""
        return self._end("")

    def _end(self, space: str) -> str:
        sentence, self._sentence = self._sentence, ""
        if self._admitting and not self._released and not normal(sentence).startswith(UNKNOWING):
            # Asked again to admit it, the reply opens otherwise (an endpoint that does not hold
            # it to the pattern): it goes out unchecked, as it did before admissions were read.
            self._armed = False
            return sentence + space
        read = ("and " if self._midway else "") + sentence
        facts = invented(read, self._known)
        if self._own_name is not None and own_name_in(sentence, self._own_name):
            facts.append(self._own_name)
        if not facts and self._sources is not None:
            facts = [fact for fact, base in facts_in(read) if self._unfounded(base)]
        if facts:
            self.invented = facts
            if self._admitting and not self._released:
                # Asked again to admit it, the model said it did not know and went on to
                # make the answer up ("I don't know, but ..."): the admission is what stands.
                self.cut = True
                return _admitted(sentence, facts)
            self.cut = self._released
            return ""
        self._released |= bool(sentence.strip())
        self._midway = bool(sentence.strip()) and not sentence.rstrip().endswith(tuple(ENDS))
        return sentence + space

    def _unfounded(self, base: str) -> bool:
        """Whether a fact of the answer, not one the question says, comes from no line that
        speaks of what was asked."""
        word, sources = base.split("'")[0], self._sources
        return sources is not None and word not in self._asked and sources.unfounded(word)


def _admitted(sentence: str, facts: list[str]) -> str:
    """``sentence`` up to the clause that gives the first of the made-up ``facts``, ended."""
    at = min((sentence.find(fact) for fact in facts if fact in sentence), default=len(sentence))
    before = sentence[:at]
    cut = max((m.start() for m in _CLAUSE_BREAK.finditer(before)), default=len(before))
    kept = before[:cut].rstrip(" ,;:-\u2014")
    return kept + "." if kept else ""


def _long(held: str) -> bool:
    return len(held.split()) >= HOLD_WORDS
