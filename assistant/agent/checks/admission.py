"""An admission that names what it does not know.

Asked of something it was never told, the 0.5B model answers "I don't know." and nothing more,
or the grounding check cuts an invented answer down to that (grounding.py). Said to every such
question in a conversation it is the same reply word for word, and it does not show the user
which question it heard. A reply that is an admission alone (said once or over again, "I
don't know, but I'm sorry, I don't know.") is held to its end and said once, with the
question as a clause ("I don't know how old your niece is."), turned to
speak to the user. A question whose clause cannot be built surely (one asked in the past
tense, whose verb would need its own past form; one about the assistant) keeps the bare
admission.
"""

from __future__ import annotations

import re
from typing import Self

from assistant.agent.checks.check import HoldingCheck, Seen, Verdict
from assistant.agent.checks.text import compared, straight
from assistant.agent.reply_form import ReplyForm

# The words an admission alone is said in, apologies and all ("I don't know, but I'm sorry, I
# don't know."): a reply of none but these is one (text.compared form).
_ADMISSION_WORDS = frozenset(
    (*("i", "don't", "do", "not", "know", "i'm", "am", "sure"), "sorry", "but", "and", "that")
)
_CORE = re.compile(r"\b(?:i don't know|i do not know|i'm not sure|i am not sure)\b", re.I)
# Longer than this, a reply is not held as a possible admission.
_MOST_WORDS = 16

_WH = frozenset(("what", "where", "when", "who", "whom", "whose", "which", "why", "how"))
# Words that make one question word with "how" ("how old", "how many").
_HOW = frozenset(("much", "many", "old", "long", "far", "often", "big", "tall", "soon", "late"))
_BE = frozenset(("is", "are", "am", "was", "were", "isn't", "aren't", "wasn't", "weren't"))
_DO = frozenset(("do", "does"))
# Helpers that stay before the verb, which keeps its form ("what your dog can eat").
_KEPT_AUX = frozenset(
    (
        *("will", "would", "can", "could", "should", "have", "has", "had"),
        *("won't", "wouldn't", "can't", "couldn't", "shouldn't", "haven't", "hasn't"),
        *("don't", "doesn't", "didn't"),
    )
)
_AUX = _BE | _DO | _KEPT_AUX | {"did"}
# The first person of the user's question said to them.
_TURNED = {
    "i": "you",
    "me": "you",
    "my": "your",
    "mine": "yours",
    "myself": "yourself",
    "i'm": "you're",
    "i've": "you've",
    "i'll": "you'll",
    "i'd": "you'd",
}
_SECOND_PERSON = frozenset(("you", "your", "yours", "yourself", "you're", "you've"))
_PRONOUNS = frozenset(("i", "we", "they", "he", "she", "it"))
_DETERMINERS = frozenset(("my", "our", "his", "her", "their", "the", "this", "that"))
# Words at a question's end that go after its verb ("when your train is now").
_TRAILING = frozenset(("now", "today", "tomorrow", "tonight", "again", "then", "currently"))
# Words that may follow a verb, so that the word before them is surely one ("work at ..."),
# where a plain word might still be the subject's noun ("my older brother live").
_AFTER_A_VERB = _TRAILING | frozenset(
    (
        *("at", "in", "on", "for", "to", "from", "with", "about", "of", "by", "after"),
        *("before", "near", "into", "up", "out", "off", "over", "under", "around", "during"),
        *("the", "a", "an", "my", "his", "her", "their", "our", "this", "that", "these"),
        *("those", "every", "each", "some"),
    )
)
# Words of place and time after "be" that show the question word is its subject ("what is on
# my calendar", said back as "what is on your calendar", not "what on your calendar is").
_PLACE_WORDS = frozenset(
    ("on", "in", "at", "for", "with", "about", "after", "before", "near", "under", "behind")
)
# Participles that "be" goes before ("when your daughter was born").
_PARTICIPLES = frozenset(("born", "known", "made", "done", "gone", "seen", "held", "kept", "paid"))
_WORD = re.compile(r"[A-Za-z\u00c0-\u024f0-9'-]+")


def asked_clause(question: str) -> str | None:
    """``question`` (a what/when/where/who/how question) as the clause of a statement, said to
    the user ("How old is my niece?" -> "how old your niece is"); None where it cannot be
    built surely."""
    words = _split_contractions(_WORD.findall(straight(question)))
    if not words or words[0].lower() not in _WH:
        return None
    lowered = [word.lower() for word in words]
    if _SECOND_PERSON & set(lowered):
        return None
    end = _asking_words(lowered)
    aux_at = next((at for at in range(end, min(len(words), end + 3)) if lowered[at] in _AUX), None)
    if aux_at is None:  # the question word is its subject ("who lives in ...")
        return _turned(words) if len(words) > 1 and end == 1 else None
    phrase, aux, rest = words[:aux_at], lowered[aux_at], words[aux_at + 1 :]
    if not rest:
        return None
    verb = _verb(rest)
    if aux in _BE:
        be = _person(aux, rest)
        if rest[0].lower() in _PLACE_WORDS:  # the question word is the subject ("what is on")
            return _turned([*phrase, be, *rest])
        if lowered[0] != "why":  # the question words ask for what follows "be"
            return _turned([*phrase, *_with_be(rest, be)])
        # "Why is X Y?": "be" goes after the subject.
        return None if verb is None else _turned([*phrase, *rest[:verb], be, *rest[verb:]])
    if verb is None or aux == "did":  # "did": the verb would need its past form
        return None
    if aux in _DO:
        said = _third_person(rest[verb].lower()) if aux == "does" else rest[verb]
        return _turned([*phrase, *rest[:verb], said, *rest[verb + 1 :]])
    return _turned([*phrase, *rest[:verb], aux, *rest[verb:]])


def statement_order(clause: str) -> str | None:
    """A clause written in a question's order, its helper verb before its subject ("what
    can't I eat"), in a statement's, said to the user ("what you can't eat"); None for one in
    a statement's order already ("how old I am") or one not built surely."""
    words = _split_contractions(_WORD.findall(straight(clause)))
    lowered = [word.lower() for word in words]
    if len(words) < 3 or lowered[0] not in _WH:
        return None
    end = _asking_words(lowered)
    if end >= len(words) or lowered[end] not in _AUX:
        return None
    return asked_clause(clause)


def _asking_words(lowered: list[str]) -> int:
    """How many words of a question ask it: "how old" two, "what" one."""
    return 2 if lowered[0] == "how" and len(lowered) > 1 and lowered[1] in _HOW else 1


def _split_contractions(words: list[str]) -> list[str]:
    """ "what's" as "what is" (a question word with "is" run into it)."""
    out: list[str] = []
    for word in words:
        head, _, tail = word.partition("'")
        if head.lower() in _WH and tail.lower() == "s":
            out += [head, "is"]
        else:
            out.append(word)
    return out


def _verb(rest: list[str]) -> int | None:
    """Where the verb after the subject that opens ``rest`` is, if surely there: after a
    pronoun, after a name or a determiner and one noun (possessives and all: "my sister's
    husband") where what follows is no word that could be the verb instead."""
    first = rest[0].lower()
    if first in _PRONOUNS:
        return 1 if len(rest) > 1 else None
    if rest[0][:1].isupper():
        at = 1
    elif first in _DETERMINERS:
        at = 2
    else:
        return None
    while at < len(rest) and rest[at - 1].lower().endswith("'s"):
        at += 1
    if at >= len(rest):
        return None
    after = rest[at + 1] if at + 1 < len(rest) else None
    sure = after is None or after.lower() in _AFTER_A_VERB or after[:1].isupper() or after.isdigit()
    return at if sure else None


def _person(be: str, rest: list[str]) -> str:
    """The form of ``be`` said to the user ("am" of "am I" is "are" of "you are")."""
    if rest[0].lower() != "i":
        return be
    return {"am": "are", "was": "were", "wasn't": "weren't"}.get(be, be)


def _with_be(rest: list[str], be: str) -> list[str]:
    """``rest`` with ``be`` after its subject: before a participle ("is called", "are
    working"), else before the trailing words of time, else at the end."""
    lowered = [word.lower() for word in rest]
    at = next((i for i, word in enumerate(lowered) if i and _participle(word)), None)
    if at is None:
        at = len(rest)
        while at > 1 and lowered[at - 1] in _TRAILING:
            at -= 1
    return [*rest[:at], be, *rest[at:]]


def _participle(word: str) -> bool:
    long_form = len(word) > 4 and word.endswith(("ing", "ed")) and not word.endswith("eed")
    return long_form or word in _PARTICIPLES


def _third_person(verb: str) -> str:
    if verb in ("have", "do", "go"):
        return {"have": "has", "do": "does", "go": "goes"}[verb]
    if verb.endswith(("s", "sh", "ch", "x", "z")):
        return verb + "es"
    if verb.endswith("y") and len(verb) > 1 and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _turned(words: list[str]) -> str:
    """The clause's words, the user's first person as the second, in lower case but names."""
    out = []
    for at, word in enumerate(words):
        lowered = word.lower()
        turned = _TURNED.get(lowered)
        if turned is not None:
            out.append(turned)
        elif at == 0 or not word[:1].isupper():
            out.append(lowered)
        else:
            out.append(word)
    return " ".join(out)


class NamedAdmission(HoldingCheck):
    """Feed it a reply's text as it streams; it returns what may be shown now."""

    name = "admission"

    def __init__(self, question: str) -> None:
        """``question``: the user's words the reply answers ("" disarms it)."""
        self._clause = asked_clause(question) if question.strip() else None
        self._held = ""
        self._open = self._clause is None
        self.named = False

    @classmethod
    def for_step(cls, form: ReplyForm, seen: Seen) -> Self:
        return cls(seen.heard)

    def feed(self, piece: str) -> str:
        if self._open:
            return piece
        self._held += piece
        words = compared(self._held)
        whole, _, last = words.rpartition(" ") if not words.endswith(" ") else (words, "", "")
        admitting = set(whole.split()) <= _ADMISSION_WORDS and len(words.split()) <= _MOST_WORDS
        if admitting and any(word.startswith(last) for word in _ADMISSION_WORDS):
            return ""  # it may yet be an admission alone
        return self._release()

    def flush(self) -> str:
        words = compared(self._held, whole=True)
        core = _CORE.search(straight(self._held))
        if self._open or self._clause is None or core is None:
            return self._release()
        if not set(words.split()) <= _ADMISSION_WORDS:
            return self._release()
        admission = self._held[: core.end()].strip()
        self._held, self._open, self.named = "", True, True
        return f"{admission} {self._clause}."

    @property
    def verdict(self) -> Verdict:
        return Verdict.TRIM if self.named else Verdict.PASS

    def reason(self) -> str:
        return "an admission alone was said with the question it answers" if self.named else ""
