"""The rules every reply of the conversation benchmark is held to, and what each case adds.

For every turn: no copy of an earlier reply or of the agent's instructions, no reply that speaks
as the user or to someone other than the user, no "I don't know" when the answer was in what
the agent was shown, no name, date or number that nobody said. A case may add the words an
answer must hold (any of ``expect_any``), words it must not (``forbid``: a meal for someone
with a stated diet), that the thing asked was never said (``never_said``: the reply must say
so, and invent nothing), that it is free writing (``creative``: a joke or a recipe may name
things nobody said), the tool the request needs (``tool``: checked on the service's state
by the benchmark, not here), and what the user's news is (``news``: "bad", "good" or "plain",
labelled by hand from the user's words): bad news is not met with cheer, good news not with
sympathy, a plain fact with neither and not celebrated as news.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from voice.wer import normalize

# A span this many words long, shared with what the window told the agent (its instructions,
# the persona block, an event's framing) and said by no user, is copied.
COPIED_SPAN_WORDS = 6
# A sentence this many words long, said before in the conversation, repeats an earlier reply.
REPEATED_SENTENCE_WORDS = 6
# A first-person clause that goes on with this many of a user's first-person words speaks as
# the user ("My sister works at ..." written back as the assistant's own).
AS_USER_WORDS = 4

# How a reply's first sentence opens in each tone, as this judge reads it (its own word
# lists, not the agent's).
_CHEER = re.compile(
    r"^\W*(?:good news|great news|great|"
    r"that's (?:great|wonderful|fantastic|amazing|awesome|lovely)|that is great|"
    r"wonderful|fantastic|amazing|awesome|excellent|brilliant|lovely|nice|"
    r"congratulations|congrats|good for you|how (?:exciting|wonderful|lovely)|yay|hooray|"
    r"(?:i'm |i am )?(?:so )?(?:glad|happy|pleased) to hear)\b",
    re.IGNORECASE,
)
_NEWS_CHEER = re.compile(r"^\W*(?:good news|great news|congratulations|congrats)\b", re.I)
_SYMPATHY = re.compile(
    r"^\W*(?:oh no|(?:i'm |i am )?(?:so )?sorry|that's (?:too bad|a shame|awful|terrible)|"
    r"what a shame|unfortunately|oh dear)\b",
    re.IGNORECASE,
)
# Which openings are the wrong tone for each kind of news.
_WRONG_TONE = {
    "bad": (_CHEER,),
    "good": (_SYMPATHY,),
    "plain": (_SYMPATHY, _NEWS_CHEER),
}

_UNKNOWN = re.compile(
    r"\b(?:i (?:do not|don't|dont) (?:know|have|remember|recall)|i'm not sure|i am not sure|"
    r"you haven't (?:told|mentioned|said)|you have not (?:told|mentioned|said)|"
    r"you didn't (?:tell|mention|say)|you did not (?:tell|mention|say)|"
    r"i (?:can't|cannot) (?:find|remember|recall|tell)|no (?:record|information|idea)|"
    r"not (?:something|anything) you(?:'ve| have)? (?:told|mentioned|said)|"
    r"i have no (?:idea|record|information)|unknown to me)",
    re.IGNORECASE,
)

# "Hi Maya", "Congratulations, Maya!", "Thanks, Maya." : who the reply speaks to.
# The greeting in any case, the name only with its capital: (?i:...) scopes the flag.
_ADDRESS_AFTER = re.compile(
    r"\b(?i:hi|hello|hey|thanks|thank you|congratulations|congrats|sorry|welcome|goodbye|bye|"
    r"good night|goodnight|well done|good for you|cheers|see you|take care|dear)"
    r",?\s+([A-Z][\w'-]*(?:\s+OS)?)"
)
_ADDRESS_END = re.compile(r",\s+([A-Z][a-z][\w'-]*)\s*[!.?](?:\s|$)")
_NOT_A_NAME = {
    "i",
    "i'm",
    "i'll",
    "i've",
    "i'd",
    "there",
    "everyone",
    "friend",
    "again",
    "too",
    "so",
    "for",
    "to",
    "and",
    "on",
    "in",
    "that",
    "the",
    "a",
    "you",
    "me",
    "it",
    "now",
    "then",
    "soon",
    "today",
    "tomorrow",
    "tonight",
    "later",
    "mate",
}

_FIRST_PERSON_START = re.compile(r"\b(?:i|i'm|im|my|we|we're|our)\b", re.IGNORECASE)
# A sentence in which the assistant says what the user is, has or does, as its own.
_AS_USER_SENTENCE = re.compile(r"^(?:i|i'm|i am|my|we|we're|our)\b", re.IGNORECASE)
# How the assistant speaks of itself: these open its own first-person sentences.
_OWN_VOICE = re.compile(
    r"^(?:i(?:'m| am) (?:sorry|glad|happy|not sure|here|afraid|so)|i (?:hope|think|can|could|"
    r"would|will|don't|do not|can't|cannot|see|understand|know|remember|have no|haven't|"
    r"wish|love|bet|recommend|suggest|'d|'ll)|i'll|i'd|i've|my (?:pleasure|apologies))",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\b\d+(?:[.,:]\d+)?\b")
# A capitalised word inside a sentence (not its first word): a name, a place, a title.
_INNER_CAPITAL = re.compile(r"(?<=[a-z,;:)'\"] )([A-Z][a-z][\w'-]*)")
# Words that are capitalised without being anything anybody has to have said.
_ANY_CAPITAL = {
    "i",
    "brain",
    "os",
    "am",
    "pm",
    "ok",
    "okay",
    "english",
    *(name.lower() for name in calendar.day_name),
    *(name.lower() for name in calendar.month_name if name),
}


@dataclass(frozen=True)
class Case:
    """One user message and what its reply is held to besides the rules for every turn."""

    say: str
    expect_any: tuple[str, ...] = ()
    forbid: tuple[str, ...] = ()
    never_said: bool = False
    creative: bool = False
    tool: str | None = None
    news: str | None = None

    @classmethod
    def of(cls, value: dict[str, object]) -> Case:
        def words(key: str) -> tuple[str, ...]:
            listed = value.get(key, [])
            assert isinstance(listed, list)
            return tuple(str(word) for word in listed)

        tool, news = value.get("tool"), value.get("news")
        assert news is None or news in _WRONG_TONE, news
        return cls(
            say=str(value["say"]),
            expect_any=words("expect_any"),
            forbid=words("forbid"),
            never_said=bool(value.get("never_said", False)),
            creative=bool(value.get("creative", False)),
            tool=str(tool) if tool is not None else None,
            news=str(news) if news is not None else None,
        )


@dataclass
class Verdict:
    """What was wrong with one reply (nothing: it passed)."""

    copies: list[str] = field(default_factory=list)
    wrong_person: list[str] = field(default_factory=list)
    unknown_but_shown: bool = False
    invented: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    wrong_tone: str | None = None

    @property
    def passed(self) -> bool:
        return not (
            self.copies
            or self.wrong_person
            or self.unknown_but_shown
            or self.invented
            or self.wrong
            or self.wrong_tone
        )

    def reasons(self) -> list[str]:
        found = [f"copy: {copy}" for copy in self.copies]
        found += [f"wrong person: {who}" for who in self.wrong_person]
        found += ["said it did not know what it was shown"] if self.unknown_but_shown else []
        found += [f"invented: {what}" for what in self.invented]
        found += [f"wrong tone: {self.wrong_tone!r}"] if self.wrong_tone else []
        return found + self.wrong


@dataclass(frozen=True)
class Seen:
    """What a reply is judged against: the user's name, every user message so far (this one
    last), the replies before it, the agent's instructions, and what the agent was shown for
    this turn (its context window, this message aside)."""

    user: str
    said: Sequence[str]
    replies: Sequence[str]
    instructions: str
    shown: str


def says_unknown(reply: str) -> bool:
    return bool(_UNKNOWN.search(reply.replace("\u2019", "'")))


def judge(case: Case, reply: str, seen: Seen) -> Verdict:
    verdict = Verdict()
    text = reply.replace("\u2019", "'")
    # A tool's own words (a reminder's confirmation) are code's, said the same each time.
    verdict.copies = [] if case.tool else copies(text, seen)
    verdict.wrong_person = wrong_person(text, seen) + as_the_user(text, case)
    lowered = text.lower()
    if case.expect_any:
        hit = any(word.lower() in lowered for word in case.expect_any)
        if says_unknown(text) and _in(case.expect_any, seen.shown):
            verdict.unknown_but_shown = True
        elif not hit:
            verdict.wrong.append(f"expected one of {list(case.expect_any)}")
    for word in case.forbid:
        if word.lower() in lowered:
            verdict.wrong.append(f"forbidden {word.strip()!r}")
    if case.never_said and not (says_unknown(text) or "?" in text):
        verdict.wrong.append("never told, yet answered as if it knew")
    if not case.creative:
        verdict.invented = invented(text, seen, numbers=case.tool != "reminder")
    verdict.wrong_tone = wrong_tone(text, case.news)
    return verdict


def wrong_tone(reply: str, news: str | None) -> str | None:
    """The opening of ``reply`` if it is the wrong tone for the ``news`` it answers."""
    first = _sentences(reply)[0] if reply.strip() else ""
    for opening in _WRONG_TONE.get(news or "", ()):
        found = opening.match(first)
        if found is not None:
            return found.group(0).strip()
    return None


def copies(reply: str, seen: Seen) -> list[str]:
    """The earlier replies and instruction spans this reply copies."""
    found: list[str] = []
    words = normalize(reply)
    if words and any(normalize(earlier) == words for earlier in seen.replies):
        found.append("an earlier reply, word for word")
    earlier_sentences = {
        tuple(normalize(sentence))
        for earlier in seen.replies
        for sentence in _sentences(earlier)
        if len(normalize(sentence)) >= REPEATED_SENTENCE_WORDS
    }
    for sentence in _sentences(reply):
        if tuple(normalize(sentence)) in earlier_sentences and not found:
            found.append(f"an earlier sentence: {sentence.strip()!r}")
    span = _shared_span(words, normalize(seen.instructions), _spans(seen.said))
    if span:
        found.append(f"the instructions: {span!r}")
    return found


def wrong_person(reply: str, seen: Seen) -> list[str]:
    """Whom the reply speaks to, if not the user; and a user's own words said as its own."""
    found: list[str] = []
    for pattern in (_ADDRESS_AFTER, _ADDRESS_END):
        for match in pattern.finditer(reply):
            name = match.group(1)
            if name.lower() not in _NOT_A_NAME and name.lower() != seen.user.lower():
                found.append(f"speaks to {name}")
    users_first_person = _first_person_runs(seen.said)
    for run in _first_person_runs([reply]):
        if run in users_first_person:
            found.append(f"speaks as the user: {' '.join(run)!r}")
            break
    return found


def as_the_user(reply: str, case: Case) -> list[str]:
    """A sentence that answers a question about the user as if the assistant were them ("I
    am allergic to ..." for "What am I allergic to?")."""
    if not case.expect_any:
        return []
    for sentence in _sentences(reply):
        plain = sentence.strip()
        first_person = _AS_USER_SENTENCE.match(plain) and not _OWN_VOICE.match(plain)
        if first_person and any(word.lower() in plain.lower() for word in case.expect_any):
            return [f"speaks as the user: {plain!r}"]
    return []


def invented(reply: str, seen: Seen, numbers: bool = True) -> list[str]:
    """Names and numbers in the reply that no user message said."""
    said = " ".join(seen.said).lower()
    found = [
        name
        for name in _INNER_CAPITAL.findall(reply)
        if name.lower() not in _ANY_CAPITAL and name.lower().rstrip("'s") not in said
    ]
    if numbers:
        digits = set(_NUMBER.findall(" ".join(seen.said)))
        found += [number for number in _NUMBER.findall(reply) if number not in digits]
    return found


def _in(words: Sequence[str], text: str) -> bool:
    lowered = text.lower()
    return any(word.lower() in lowered for word in words)


def _sentences(text: str) -> list[str]:
    return [part for part in re.split(r"(?<=[.!?])\s+", text) if part.strip()]


def _spans(texts: Sequence[str]) -> set[tuple[str, ...]]:
    spans: set[tuple[str, ...]] = set()
    for text in texts:
        words = normalize(text)
        spans.update(
            tuple(words[i : i + COPIED_SPAN_WORDS])
            for i in range(len(words) - COPIED_SPAN_WORDS + 1)
        )
    return spans


def _shared_span(
    words: Sequence[str], source: Sequence[str], allowed: set[tuple[str, ...]]
) -> str | None:
    """The first run of COPIED_SPAN_WORDS words of ``words`` that ``source`` holds and no
    ``allowed`` span is."""
    if len(words) < COPIED_SPAN_WORDS:
        return None
    source_spans = {
        tuple(source[i : i + COPIED_SPAN_WORDS]) for i in range(len(source) - COPIED_SPAN_WORDS + 1)
    }
    for i in range(len(words) - COPIED_SPAN_WORDS + 1):
        span = tuple(words[i : i + COPIED_SPAN_WORDS])
        if span in source_spans and span not in allowed:
            return " ".join(span)
    return None


def _first_person_runs(texts: Sequence[str]) -> set[tuple[str, ...]]:
    """Each first-person word with the AS_USER_WORDS words after it."""
    runs: set[tuple[str, ...]] = set()
    for text in texts:
        for sentence in _sentences(text):
            words = normalize(sentence)
            for i, word in enumerate(words):
                if _FIRST_PERSON_START.fullmatch(word) and i + AS_USER_WORDS < len(words):
                    runs.add(tuple(words[i : i + AS_USER_WORDS + 1]))
    return runs
