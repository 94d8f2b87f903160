"""How a reply may not open: the one opening guard.

A reply's opening is held while it could still become one of these; one that does is never
shown or spoken, the stream is closed, and the step is asked once more, held to open willingly
("Sure", "Oh", "Once", ...: WILLING_OPENINGS) by the schema or the grammar (asked with a note
instead, the 0.5B model said the note back). A reply that merely starts like one ("I'm sorry
to hear that") is released as soon as it parts from every such opening, a word or two.

- A refusal, or the model disowning itself ("I'm just a computer"). The packaged models are
  code models, and they refuse what is not code: a request for a story, bad news, a request
  for a reminder (the 0.5B model far more often than the 1.5B). Instructions did not stop it.
- The wrong tone (tone.py): sympathy where nothing went wrong (the models open replies to
  plain news with condolences: for a date in the diary, a moved appointment), cheer for
  trouble, news celebrated for a plain fact. "Oh" still lets a real misfortune the word list
  missed be met with "Oh no, ...".
- The user in the third person ("The user told you ..."): a reply speaks to them, and one
  that opens so is saying back a note of the prompt.
- An earlier reply's opening or any longer sentence of it (recent.py), or the user's own
  words: the small models wrote a plain statement back, word for word, as their reply, and
  answered a question with a sentence of an earlier answer.

Copies are let through owned where the answer may well be the same: a question the user asked
before in the same words, answered as it was then, and an answer about the user's life that
says again a fact an earlier reply said of what it asks about (a word in common). A person
says so ("As I said, ..."), and the reply is shown so, not asked again: asked again, the small
model bent a right answer out of shape to open differently, and lost the fact.

On an endpoint with native tool calling (no grammar) the re-ask is simply asked again: what
the second reply says stands.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Self

from assistant.agent.about_user import diet_known
from assistant.agent.checks.check import Check, Seen, Verdict
from assistant.agent.checks.recent import MIN_WORDS, opening
from assistant.agent.checks.text import SWAPS, compared, normal, straight
from assistant.agent.reply_form import ReplyForm
from assistant.agent.routing import is_question
from assistant.agent.told import answer_told, user_name
from assistant.agent.tone import Tone, unwanted_openings, willing_for

# How a refusal opens, after an apology or none.
_APOLOGIES = (
    "",
    "i'm sorry, but ",
    "i'm sorry, ",
    "i'm so sorry, but ",
    "i'm so sorry, ",
    "i am sorry, but ",
    "sorry, but ",
    "sorry, ",
    "i apologize, but ",
    "unfortunately, ",
)
_REFUSALS = (
    "i can't assist",
    "i can't help with",
    "i can't help you with",
    "i cannot assist",
    "i cannot help with",
    "i can't provide",
    "i can't fulfill",
    "i can't do that",
    "i'm unable to",
    "i am unable to",
    "i'm not able to",
    "as an ai",
    "i'm just a computer",
    "i'm just an ai",
    "i am just a computer",
)
REFUSALS = tuple(apology + refusal for apology in _APOLOGIES for refusal in _REFUSALS)

# The one reply asked for after a held opening opens with one of these. None of them opens a
# refusal, and none is an apology: allowed "I'm sorry to hear", the 1.5B model answered a
# friendly greeting with "I'm sorry to hear about that." (sympathy still opens with "Oh").
WILLING_OPENINGS = (
    "Sure",
    "Of course",
    "Here",
    "Oh",
    "OK",
    "Okay",
    "Got it",
    "Noted",
    "That",
    "Yes",
    "No",
    "Once",
    "Well",
    "Hello",
    "Hi",
    "Thanks",
    "You",
    "Your",
)
# Willing openings that are words of their own, said with a mark and then more words: let go on
# with a space, the 0.5B model wrote on into the sentence it was asked again for ("Well be
# working from ...", the question said back); let end after the mark, "Well." was all it said.
INTERJECTIONS = frozenset(
    ("Sure", "Of course", "Oh", "OK", "Okay", "Got it", "Noted", "Yes", "No", "Well")
)
# How many times a reply that copies is asked again: the 0.5B model's re-ask, held off the
# copy's first word, opened with another cheer and then wrote the copied sentence (which the
# loop check dropped, leaving the cheer: itself an earlier reply, said whole); compared in
# either person, more copies are found, and two re-asks in a row could both copy.
COPY_REASKS = 3


# How many words of an earlier answer a reply may say again before it is owned as said again.
OWN_AFTER = 6
# How an answer said again to a question asked again opens: the n-th time, the n-th (or last).
AGAIN = ("As I said, ", "Like I said, ", "As I told you before, ")
_LEAD_IN = re.compile(
    r"^\s*(?:" + "|".join(re.escape(lead.strip()) for lead in AGAIN) + r")\s*", re.I
)
# Words that open a sentence and go on in lower case after a lead-in (a name keeps its capital).
# fmt: off
_COMMON = frozenset((
    "you", "your", "yours", "you're", "you've", "you'll", "the", "a", "an", "it", "it's", "its",
    "that", "that's", "this", "these", "those", "there", "there's", "they", "they're", "their",
    "he", "he's", "his", "she", "she's", "her", "we", "we're", "our", "my", "yes", "no", "sure",
    "okay", "ok", "well", "on", "in", "at", "to", "for", "from", "with", "about", "after", "before",
    "every", "each", "some", "most", "one", "nothing", "not", "none", "today", "tomorrow",
    "yesterday",
))
# fmt: on


# How a joke opens, which a reply has only if the user asked for one: once a conversation held
# one, the 0.5B model answered later news and questions with "Here's a joke about ...".
_JOKE_LEADS = ("", "sure, ", "sure! ", "okay, ", "ok, ", "of course! ", "of course, ")
UNASKED_JOKES = tuple(
    lead + joke for lead in _JOKE_LEADS for joke in ("here's a joke", "here is a joke")
)
_ASKS_FOR_FUN = re.compile(r"\b(?:jokes?|funny|laugh|puns?|smile|cheer me up|amuse)\b", re.I)
# How a reply that says back a note of the prompt opens: of the user, to them.
THIRD_PERSON = ("the user ", "the user's ")


def as_the_user(name: str | None) -> tuple[str, ...]:
    """How a reply opens that speaks as the user named ``name``: answering a greeting that
    gave the user's name, the 0.5B model introduced itself by it."""
    if not name:
        return ()
    said = normal(name)
    return tuple(
        f"{opening} {said}{after}"
        for opening in ("i'm", "i am", "my name is", "my name's")
        for after in " ,.!"
    )


# How a reply opens that says it does not know (held back where the user said the answer).
UNKNOWING = (*(apology + "i don't know" for apology in _APOLOGIES), "i do not know")


def person_blind(text: str, last: bool = True) -> str:
    """``text`` (normal form) with first-person words as the second person's; its last word
    too only with ``last`` (while a reply streams it may be cut short: "i" of "in")."""
    ended = r"(?=[^a-z'])" if not last else r"(?![a-z'])"
    return re.sub(r"[a-z']+" + ended, lambda word: SWAPS.get(word.group(0), word.group(0)), text)


def owned(text: str) -> bool:
    """Whether ``text`` opens with a lead-in of ``AGAIN`` (an answer owned as said before)."""
    return _LEAD_IN.match(text) is not None


def lead_in(text: str) -> int | None:
    """How long the lead-in of ``AGAIN`` that ``text`` opens with is: 0 for none, None while
    ``text`` could still become one."""
    match = _LEAD_IN.match(text)
    if match is not None and match.end() < len(text):
        return match.end()
    start = normal(text)
    return None if any(lead.lower().startswith(start) for lead in AGAIN) else 0


def without_lead_in(text: str) -> str:
    """``text`` without a lead-in of ``AGAIN``."""
    return _LEAD_IN.sub("", text, count=1)


def said_again(answer: str, times: int) -> str:
    """``answer`` (given ``times`` before, at least once) opened as an answer said again."""
    text = without_lead_in(answer)
    first = text.split(maxsplit=1)[0] if text.split() else ""
    if straight(first).lower().rstrip(",.!?") in _COMMON:
        text = text[0].lower() + text[1:]
    return AGAIN[min(times, len(AGAIN)) - 1] + text


def willing_openings(avoiding: tuple[str, ...] = (), tone: Tone = Tone.PLAIN) -> tuple[str, ...]:
    """The willing openings of the ``tone`` that begin none of the ``avoiding`` ones
    (lower-case): a re-ask after a copy allowed the copy's own first word ("Yes, ...") wrote
    the copy again."""
    return tuple(
        word
        for word in willing_for(tone, WILLING_OPENINGS)
        if not any(_begins(avoided, word.lower()) for avoided in avoiding)
    )


def _begins(avoided: str, word: str) -> bool:
    """Whether the ``avoided`` opening begins with ``word``: copies are kept in the second
    person ("you're sorry to hear ..."), so a first-person opening is compared so too."""
    return avoided.startswith(word) or avoided.startswith(person_blind(word))


def willing_pattern(avoiding: tuple[str, ...] = (), tone: Tone = Tone.PLAIN) -> str:
    """The message pattern of a willing opening of the ``tone`` (none beginning the
    ``avoiding`` ones), an interjection with its mark."""
    openings = willing_openings(avoiding, tone)
    marked = [word for word in openings if word in INTERJECTIONS]
    alternatives = [word for word in openings if word not in INTERJECTIONS]
    if marked:
        alternatives.insert(0, "(" + "|".join(marked) + ")[,.!] ")
    return "^(" + "|".join(alternatives) + ')[^"]*$'


def echo_of(heard: str) -> tuple[str, ...]:
    """The opening of the user's own words, which a reply may not open with (nothing for a
    message shorter than ``MIN_WORDS`` words)."""
    start = normal(opening(heard))
    return (start,) if len(start.split()) >= MIN_WORDS else ()


class OpeningGuard(Check):
    """Feed it the text of one reply as it streams; it returns what may be shown now."""

    name = "opening"

    def __init__(
        self,
        armed: bool = True,
        unwanted: tuple[str, ...] = (),
        copies: tuple[str, ...] = (),
        again: tuple[str, ...] = (),
        times: int = 1,
        echo: tuple[str, ...] = (),
        refusals: bool = True,
        recall: bool = False,
    ) -> None:
        """``unwanted``: openings held back like a refusal's for this reply (a refusal's too
        unless not ``refusals``); ``copies``:
        those of earlier replies, and ``echo`` the user's words; ``again``: those it may say
        again, owned as said before, the ``times``-th time (all lower-case). An earlier reply
        is compared whatever person the model writes it in: the person check turns "My
        brother ..." to "Your brother ..." after this one, so the same answer comes both ways.
        ``recall``: the user's words hold the answer (told.py), so a reply that refused or said
        it did not know is asked again to say what they told."""
        self.refused = False
        self._recall = recall
        # Whether the reply said an earlier answer again, and was shown as such.
        self.repeated = False
        self._again = tuple(
            dict.fromkeys(person_blind(without_lead_in(answer)) for answer in again)
        )
        self._times = times
        # The copied opening, or one of the wrong tone, the reply had: the re-ask avoids it,
        # so a willing opening it begins with is not one to take ("That" for "That's great
        # news!", which met a plain fact again when only the first try was held to the tone).
        self.copied: str | None = None
        self._held = ""
        self._open = not armed
        self._unwanted = (REFUSALS if refusals else ()) + unwanted
        # Compared word for word, marks aside (text.compared).
        self._copies = tuple(dict.fromkeys(person_blind(compared(c, whole=True)) for c in copies))
        self._echo = tuple(compared(words, whole=True) for words in echo)

    @classmethod
    def for_step(cls, form: ReplyForm, seen: Seen) -> Self:
        """Armed for every unwanted opening on a first try; on a re-ask after a copy, for
        copies alone, up to ``COPY_REASKS`` times (the grammar keeps refusals out; "Oh no"
        may meet a misfortune the word list missed)."""
        recent = seen.recent
        copies, echo = recent.openings() + recent.long_sentences(), echo_of(seen.heard)
        if form.admitting:
            # Asked to admit it does not know, a reply cut to its admission ("I don't know.":
            # grounding.py) said that before: asked again for it, it went round three times.
            copies = tuple(copy for copy in copies if not copy.startswith(UNKNOWING))
        asked = recent.answers(seen.heard) if is_question(seen.heard) else ()
        # An answer about the user's life may say again what an earlier reply said of what it
        # asks about (a word in common), not an unrelated earlier reply.
        told: tuple[str, ...] = ()
        if form.grounded:
            told = recent.ownable(about=seen.heard)
        again, times = asked + told, max(1, len(asked))
        if not form.willing:
            # Nothing but the user's own words has a tone (a heartbeat's step answers none).
            unwanted = unwanted_openings(form.tone) + THIRD_PERSON if seen.heard.strip() else ()
            unwanted += as_the_user(user_name(seen.human))
            if seen.heard.strip() and not _ASKS_FOR_FUN.search(seen.heard):
                unwanted += UNASKED_JOKES
            # Held to say what was told, the reply cannot open so: a step asked again so by
            # this guard is not asked again for it.
            asking = form.grounded and not (form.admitting or form.recalling)
            recall = asking and answer_told(seen.heard, seen.said, seen.human)
            if asking and (recall or diet_known(seen.heard, seen.human)):
                unwanted += UNKNOWING
            return cls(True, unwanted, copies, again, times, echo, recall=recall)
        # Armed after a refusal too (a re-ask after one wrote an earlier reply again, a
        # reminder's confirmation nobody asked for), but for copies alone: a second refusal
        # stands.
        armed = len(form.avoiding) < COPY_REASKS
        return cls(armed, copies=copies, again=again, times=times, echo=echo, refusals=False)

    def feed(self, piece: str) -> str:
        if self._open or not piece:
            return piece
        self._held += piece
        start = normal(self._held)
        bare = person_blind(without_lead_in(start))
        if any(bare.startswith(answer) for answer in self._again) or self._owns_early(bare):
            self.repeated, self._open = True, True
            held, self._held = self._held, ""
            return said_again(held.lstrip(), self._times)
        copied = self._copy(self._held)
        unwanted = next((u for u in self._unwanted if start.startswith(u)), None)
        if copied is not None or unwanted is not None:
            # A refusal is not avoided by its words: asked again, a second refusal stands.
            self.refused = True
            self.copied = copied or (unwanted if unwanted not in REFUSALS else None)
            return ""
        # Whether it may still become one: its last word as written, or turned, or cut short.
        words = compared(self._held)
        forms = {person_blind(words), person_blind(words, last=False)}
        bares = {bare, person_blind(without_lead_in(start), last=False)}
        if (
            any(a.startswith(b) for a in self._again for b in bares)
            or any(c.startswith(f) for c in self._copies for f in forms)
            or any(c.startswith(words) for c in self._echo)
            or any(u.startswith(start) for u in self._unwanted)
        ):
            return ""
        return self.flush()

    def _copy(self, held: str, whole: bool = False) -> str | None:
        """The earlier reply's opening or the user's words that ``held`` begins with."""
        words = compared(held, whole)
        copied = next((c for c in self._copies if person_blind(words).startswith(c)), None)
        return copied or next((c for c in self._echo if words.startswith(c)), None)

    def _owns_early(self, bare: str) -> bool:
        """Whether the reply, still being written, has said ``OWN_AFTER`` whole words of an
        earlier answer it may say again: it is owned from there, not held to the end of a long
        opening (a list of things to pack was held 13 s)."""
        words = bare.split()
        if len(words) <= OWN_AFTER:  # the last word may be cut short
            return False
        said = " ".join(words[:OWN_AFTER]) + " "
        return any(answer.startswith(said) for answer in self._again)

    def flush(self) -> str:
        """What is held, at the end of the reply (a short one that only looked like an
        unwanted opening so far); nothing once it was one."""
        self._open = True
        held, self._held = self._held, ""
        copied = self._copy(held, whole=True) if held and not self.refused else None
        if copied is not None:  # a copy whole, with no mark after its last word
            self.refused, self.copied = True, copied
        return "" if self.refused else held

    @property
    def verdict(self) -> Verdict:
        if self.refused:
            return Verdict.REASK
        return Verdict.TRIM if self.repeated else Verdict.PASS

    def reasked(self, form: ReplyForm) -> ReplyForm:
        if self._recall and (self.copied is None or self.copied in UNKNOWING):
            # Asked again to open willingly instead, the 0.5B model often answered around
            # what it was told, which evasion.py then asks for a third time.
            return replace(form, recalling=True)
        avoiding = (*form.avoiding, self.copied) if self.copied is not None else form.avoiding
        return replace(form, willing=True, avoiding=avoiding, recalling=False)

    def reason(self) -> str:
        if self.repeated:
            return "an answer to a question asked before was said again, as such"
        return (
            "the reply opened with a refusal, the wrong tone, an old reply or the user's words: "
            f"{self._held.strip()!r}"
        )
