"""An answer about the user said to the user, not as the user.

Asked about their own life, the 0.5B model answers in the user's voice: "I am allergic to ...",
"My daughter is ...", "I work in ..." (the user's words, which it was shown, are in the first
person). Where the question is about the user's life (routing.asks_about_their_life), each
sentence of the reply that opens in the first person, and not in the assistant's own voice
("I don't know", "I'm glad", "I think ..."), has its first-person words turned to the second
person as it streams: "You are allergic to ...". An opening that is the question's "<verb> I"
said as a statement ("Why can't I ..." answered "I can't ...") is the user's voice even where
the assistant's own opens alike. An admission that goes on with what it does not know as a
clause about what the user asked ("I don't know how old I am") has that clause turned, once the
sentence is whole. The window keeps what was shown. An answer
owned as said before ("As I said, my ...": opening.py) is judged after its lead-in.
"""

from __future__ import annotations

import re
from typing import Self

from assistant.agent.checks.admission import statement_order
from assistant.agent.checks.check import Check, Seen, Verdict
from assistant.agent.checks.opening import lead_in
from assistant.agent.checks.text import SENTENCE_END, SWAPS, straight, turned_back
from assistant.agent.reply_form import ReplyForm
from assistant.agent.told import RECALLED, terms

# Words after which a sentence opening is decided (or its end, if sooner).
_OPENING_WORDS = 3
# How the assistant speaks of itself: a sentence opening so is left as it is.
OWN_VOICE = re.compile(
    r"^(?:i(?:'m| am) (?:sorry|glad|happy|not sure|here|afraid|so|really|delighted|excited|"
    r"thrilled|always)|i (?:hope|think|can|could|would|will|don't|do not|can't|cannot|see|"
    r"understand|know|remember|recall|have no|haven't|wish|love|bet|recommend|suggest|believe|"
    r"guess|noted|just|did not|didn't|was told|heard|may|might|must|should|need|want)\b|"
    r"i'll|i'd|i've (?:noted|got|set|saved|made|added)|my (?:pleasure|apologies|bad|guess))",
    re.IGNORECASE,
)
_FIRST_PERSON_OPENING = re.compile(r"^(?:i|i'm|im|i've|my|mine)\b", re.IGNORECASE)
# An admission that goes on with what it does not know, as a clause ("I don't know how old ..."):
# asked of the user's own life, the first person in that clause is the user's ("how old I am"),
# and so is a thing of theirs it names ("I don't know my age").
_ADMITTING = ("i don't know", "i do not know", "i'm not sure", "i am not sure")
_ADMISSION = re.compile(
    "^(" + "|".join(_ADMITTING) + r") (?:(how|what|what's|where|when|who|whose|which|why|if|"
    r"whether)|my)\b"
)
_FIRST_PERSON = frozenset(("i", "i'm", "i've", "i'd", "i'll", "me", "my", "mine", "myself"))
# A verb after "I" that changes with the person.
AFTER_I = {"am": "are", "was": "were"}
_WORD = re.compile(r"[A-Za-z']+|[^A-Za-z']+")


class Perspective(Check):
    """Feed it a reply's text as it streams; it returns what to show now."""

    name = "perspective"

    def __init__(self, armed: bool, heard: str = "") -> None:
        self.armed = armed
        self._asked = _asked_of_i(heard)
        self._of_me = bool(_FIRST_PERSON.intersection(_plain(heard)))
        self._terms = terms(heard)
        # The words of an admission's opening left as they are before its clause is turned;
        # the clause speaks to the user, so their "you" stays.
        self._keep = 0
        self._admission = False
        self._possessive = False  # its clause is a thing of the user's ("my age")
        # Whether any word was turned (the window then keeps what was shown).
        self.changed = False
        self._held = ""
        # The current sentence: None while its opening is undecided, else whether it is turned.
        self._turning: bool | None = None
        self._after_i = False
        # Whether the current sentence's first word is out (a turned word after it is lower case).
        self._begun = False
        # Whether the current sentence's lead-ins ("As I said, ", "Yes, ") are behind it.
        self._led = False
        # The word before, in the sentence being turned (lower case).
        self._previous: str | None = None

    @classmethod
    def for_step(cls, form: ReplyForm, seen: Seen) -> Self:
        return cls(armed=form.grounded, heard=seen.heard)

    @property
    def verdict(self) -> Verdict:
        return Verdict.TRIM if self.changed else Verdict.PASS

    def reason(self) -> str:
        return "an answer in the user's voice was turned to speak to them" if self.changed else ""

    def feed(self, piece: str) -> str:
        if not self.armed or not piece:
            return piece
        self._held += piece
        return self._release(final=False)

    def flush(self) -> str:
        if not self.armed:
            return ""
        return self._release(final=True)

    def _release(self, final: bool) -> str:
        out = ""
        while self._held:
            if self._turning is None and not self._led:
                said = _lead_in(self._held)
                if said is None and not final:
                    return out
                if said:
                    out, self._held, self._begun = out + self._held[:said], self._held[said:], True
                    continue
                self._led = True
            if self._turning is None:
                decided = self._decide(final)
                if decided is None:
                    return out
                self._turning = decided
            end = SENTENCE_END.search(self._held)
            if self._admission and self._turning:
                if end is None and not final:
                    return out  # whether its clause is the user's is told at its end
                clause = self._held[: end.end() if end else len(self._held)]
                about = terms(_clause(clause, self._keep)) & self._terms
                self._turning = self._possessive or bool(about)
                if self._turning:
                    out += self._reordered(clause)
                    end = SENTENCE_END.search(self._held)
            if end is None:
                # A word still being written may be cut: hold the last one unless at the end.
                cut = len(self._held) if final else _last_word_start(self._held)
                out += self._turn(self._held[:cut])
                self._held = self._held[cut:]
                return out
            out += self._turn(self._held[: end.end()])
            self._held = self._held[end.end() :]
            self._turning, self._after_i, self._begun, self._led = None, False, False, False
            self._previous, self._keep, self._admission = None, 0, False
            self._possessive = False
        return out

    def _reordered(self, sentence: str) -> str:
        """The admission's opening said, with its clause in a statement's order where the
        model wrote it in the question's ("I don't know what can't I eat", which turned word
        by word asked the question back); nothing where the clause is in order already."""
        words = re.match(rf"\s*(?:\S+\s+){{{self._keep}}}", sentence)
        clause = re.match(r"[^,.!?;:]+", sentence[words.end() :]) if words else None
        reordered = statement_order(clause.group(0)) if clause else None
        if words is None or clause is None or reordered is None:
            return ""
        self.changed, self._keep, self._begun = True, 0, True
        self._held = self._held[words.end() + clause.end() :]
        return words.group(0).rstrip() + " " + reordered

    def _decide(self, final: bool) -> bool | None:
        """Whether the sentence being held is turned; None while it cannot yet be told."""
        words = straight(self._held).split()
        ended = final or bool(SENTENCE_END.search(self._held))
        if not (ended or self._held[-1:].isspace()):
            words = words[:-1]  # the last may be cut short
        if len(words) < _OPENING_WORDS and not ended:
            return None
        text = " ".join(words).lower()
        if self._of_me:
            admission = _ADMISSION.match(text)
            if admission is not None:
                self._keep, self._admission = len(admission.group(1).split()), True
                self._possessive = admission.group(2) is None
                return True
            if not ended and any(f"{a} ".startswith(f"{text} ") or text == a for a in _ADMITTING):
                return None  # its clause may follow
        if not _FIRST_PERSON_OPENING.match(text):
            return False
        return not OWN_VOICE.match(text) or tuple(_plain(text)[:3]) in self._asked

    def _turn(self, text: str) -> str:
        if not self._turning:
            return text
        pieces = []
        for token in _WORD.findall(text):
            if not token[0].isalpha():
                pieces.append(token)
                continue
            lowered = straight(token).lower()
            if self._keep:
                self._keep -= 1
                self._begun, self._previous = True, lowered
                pieces.append(token)
                continue
            swap = (
                (None if self._admission and lowered == "me" else SWAPS.get(lowered))
                or (AFTER_I.get(lowered) if self._after_i else None)
                or (None if self._admission else turned_back(lowered, self._previous))
            )
            self._after_i = lowered == "i"
            self._previous = lowered
            if swap is not None:
                self.changed = True
                token = swap if self._begun else swap[0].upper() + swap[1:]
            self._begun = True
            pieces.append(token)
        return "".join(pieces)


def _plain(text: str) -> list[str]:
    return re.findall(r"[a-z']+", straight(text).lower())


def _asked_of_i(question: str) -> frozenset[tuple[str, str, str]]:
    """The openings that say the question's "<verb> I <word>" as a statement ("why can't I
    eat" -> "I can't eat"): the user's voice, though "I can't" also opens the assistant's."""
    words = _plain(question)
    return frozenset(
        ("i", words[at - 1], words[at + 1]) for at in range(1, len(words) - 1) if words[at] == "i"
    )


def _clause(sentence: str, kept: int) -> str:
    """The ``sentence`` after its first ``kept`` words."""
    return " ".join(sentence.split()[kept:])


# An answer held to say what the user told goes on in their words, and one may open with a
# word of assent: it is judged past them.
_RECALLED = RECALLED + " "
_ASSENTS = ("yes", "sure", "okay", "ok", "no", "of course", "well", "right", "oh")
_ASSENT = re.compile(rf"(?:{'|'.join(_ASSENTS)}),\s", re.IGNORECASE)


def _lead_in(text: str) -> int | None:
    """How long the lead-in (an answer said again, one saying what the user told, a word of
    assent) that ``text`` opens with is: 0 for none, None while ``text`` could still become
    one."""
    if text.startswith(_RECALLED):
        return len(_RECALLED)
    assent = _ASSENT.match(text)
    if assent is not None and assent.end() < len(text):
        return assent.end()
    start = text.lower()
    if any(lead.startswith(start) for lead in (_RECALLED.lower(), *(f"{a}, " for a in _ASSENTS))):
        return None
    return lead_in(text)


def _last_word_start(text: str) -> int:
    """Where the last, possibly unfinished, word of ``text`` begins (or a sentence's closing
    mark, until the space after it tells that the sentence ended)."""
    match = re.search(r"[A-Za-z'\u2019]+$|[.!?]+$", text)
    return match.start() if match else len(text)
