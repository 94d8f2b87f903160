"""Situations for judging the assistant's replies: would a person have said that?

Each :class:`ReplyProbe` is a short conversation (the memories retrieval will show the agent,
up to two earlier messages, and the message being answered) with the checks its reply must pass:
news acknowledged without condolences, good news congratulated, bad news met with sympathy,
questions answered from the memories shown, "I don't know" instead of an invention, harmless
requests not refused, a new fact about someone acknowledged by name, reminders set with the
tool. Every probe also gets the :data:`COMMON` checks: a reply, no "as an AI", not the user's
own words copied back, no refusal, and a first sentence short enough to be spoken.

Each :class:`ExtractionProbe` is one stored memory about someone else ("My brother Luis ... works
as a nurse"), for checking that the knowledge graph's triplets and the day planner's chunks give
those facts to that person and not to the user ("you go to work as a nurse").

The checks are rules (words and phrases that must or must not appear), not a model's opinion:
no model judges a model, so a failure names the rule it broke and anyone can see why. The rules
are tolerant on purpose (many phrasings count as sympathy or as not knowing) and meant to catch
the failures seen from the small local models, listed on the probes that cover them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from benchmarks.replies import repeats
from voice.wer import normalize

# What is said to a person is spoken: a first sentence longer than this takes too long before
# the point (measured in words, split on . ! ? or a line break).
MAX_FIRST_WORDS = 15

# A greeting written back ("Good morning!" -> "Good morning! ...") is a greeting, not a copy, so
# the repeat rule only applies to messages of at least this many words.
MIN_REPEAT_WORDS = 4


@dataclass(frozen=True)
class Reply:
    """What a probe is judged on."""

    text: str  # what was said to the user (all messages of the turn joined)
    tools: tuple[str, ...] = ()  # names of the tools the agent called during the turn, in order


# (user's message, reply) -> None if it passes, else a short reason.
Check = Callable[[str, Reply], str | None]


def _plain(text: str) -> str:
    """Lower case with curly apostrophes (U+2019, U+2018) made straight, as a model may write."""
    return text.replace("\u2019", "'").replace("\u2018", "'").lower()


def _pattern(phrase: str) -> str:
    """A regex for ``phrase`` as whole words: "Ana" matches "Ana's", never "banana"."""
    return rf"(?<!\w){re.escape(_plain(phrase))}(?!\w)"


def _found(text: str, phrases: Sequence[str]) -> str | None:
    """The first of ``phrases`` that ``text`` holds as whole words, if any."""
    plain = _plain(text)
    return next((p for p in phrases if re.search(_pattern(p), plain)), None)


def _first_match(text: str, patterns: Sequence[str]) -> str | None:
    """The words of ``text`` that the first matching regex of ``patterns`` matched, if any."""
    plain = _plain(text)
    for pattern in patterns:
        match = re.search(pattern, plain)
        if match:
            return match.group(0)
    return None


def _words(text: str) -> list[str]:
    return re.findall(r"[\w']+", text)


def first_sentence(text: str) -> str:
    """The reply's first sentence: up to the first . ! ? followed by a space, or a line break."""
    return re.split(r"(?<=[.!?])\s+|\n+", text.strip(), maxsplit=1)[0]


# Each rule lists families of phrasing ("that's hard", "that sounds hard") rather than one
# sentence, so that a reworded reply is judged as its meaning, not as its wording.

_DISCLAIMERS = (
    r"\bas an ai\b",
    r"\blanguage model\b",
    r"\b(i'm|i am) (just |only )?(an? )?"
    r"(ai|computer|computer program|program|machine|bot|chatbot)\b",
    r"\bi (don't|do not) have (personal )?(feelings|emotions|a body|personal opinions)\b",
)

_REFUSALS = (
    r"\bi'm sorry, but i (can't|cannot)\b",
    r"\bi (can't|cannot|can not|am unable to|am not able to|won't|won't be able to) "
    r"(assist|help|comply|fulfil|do that|provide that|write that)",
    r"\bi'm (unable to|not able to) (assist|help|comply|fulfil|do that|provide that|write that)",
    r"\b(i'm|i am) not (allowed|permitted) to\b",
)

_CONDOLENCES = (
    r"\bsorry to hear\b",
    r"\bsorry for your loss\b",
    r"\bsorry about\b",
    r"\bso sorry\b",
    r"\bcondolence",
    r"\b(that's|that is|how|so) sad\b",
    r"\bunfortunately\b",
    r"\btoo bad\b",
    r"\b(that's|that is|what) a (shame|pity)\b",
)

_CONGRATULATIONS = (
    r"\bcongrat",
    r"\bwell done\b",
    r"\b(great|good|wonderful|fantastic|amazing|brilliant|exciting) news\b",
    r"\b(that's|that is|how|what|so) "
    r"(great|wonderful|fantastic|amazing|exciting|brilliant|lovely|excellent|awesome)\b",
    r"\bgood for you\b",
    r"\bproud\b",
    r"\b(happy|glad|thrilled|delighted) (for|to hear)\b",
    r"\b(great|good|wonderful|lovely) to hear\b",
    r"\b(hooray|yay|woohoo|bravo)\b",
)

_SYMPATHY = (
    r"\bsorry\b",
    r"\bcondolence",
    r"\bsad\b",
    r"\b(that's|that is|that sounds|sounds|that must be|must be|how) "
    r"(really |so |very )?(hard|tough|awful|terrible|difficult|rough|stressful|painful|"
    r"frustrating|upsetting|worrying|scary|horrible|heartbreaking|a lot)\b",
    r"\bmust be\b",
    r"\boh no\b",
    r"\bget well\b",
    r"\b(feel|feels|get|gets) better\b",
    r"\bhere for you\b",
    r"\bhang in there\b",
    r"\bthinking of you\b",
    r"\b(what|that's) a (shame|pity)\b",
)

_NOT_KNOWING = (
    r"\b(don't|do not|didn't|did not) (know|remember|recall|have)\b",
    r"\bnot (sure|certain)\b",
    r"\bno idea\b",
    r"\b(haven't|have not|didn't|did not|never|not) "
    r"(told|tell|mentioned|mention|said|say|shared)\b",
    r"\b(can't|cannot|couldn't|could not|can not) (find|remember|recall|see|tell)\b",
    r"\bnot in my (memory|memories|notes)\b",
    r"\bno (record|information|memory|note|mention)\b",
    r"\bnothing (about|on|saved|stored|in my)\b",
    r"\b(don't|do not) (see|seem to)\b",
    r"\b(would|do) you (like|want|mind) to (tell|share|let)\b",
    r"\bcan you tell me\b",
    r"\bwhat is it\?|what's it\?",
    r"\bunknown to me\b",
)


def _forbids(patterns: Sequence[str], what: str) -> Check:
    def check(said: str, reply: Reply) -> str | None:
        words = _first_match(reply.text, patterns)
        return f"{what}: {words!r}" if words else None

    return check


def _requires(patterns: Sequence[str], what: str) -> Check:
    def check(said: str, reply: Reply) -> str | None:
        return None if _first_match(reply.text, patterns) else f"no {what}"

    return check


def no_condolence() -> Check:
    """Not sorry about news that is not sad ("sorry to hear your daughter's recital is ...")."""
    return _forbids(_CONDOLENCES, "condolence for news that is not sad")


def no_congratulation() -> Check:
    """Not pleased about bad news."""
    return _forbids(_CONGRATULATIONS, "congratulation for bad news")


def congratulates() -> Check:
    """Pleased for the person: congratulations, "well done", "that's wonderful", ..."""
    return _requires(_CONGRATULATIONS, "congratulation")


def sympathises() -> Check:
    """Sorry for the person: "I'm sorry", "that sounds hard", "I hope he feels better", ..."""
    return _requires(_SYMPATHY, "sympathy")


def admits_not_knowing() -> Check:
    """Says it does not know, or asks to be told, instead of answering anyway."""
    return _requires(_NOT_KNOWING, "admission of not knowing")


def mentions(*alternatives: str) -> Check:
    """Names at least one of ``alternatives`` (whole words, any case): a name, an answer."""

    def check(said: str, reply: Reply) -> str | None:
        if _found(reply.text, alternatives):
            return None
        return f"does not mention {' or '.join(repr(a) for a in alternatives)}"

    return check


def mentions_none(*words: str) -> Check:
    """Names none of ``words``: the plausible answers it was never told, which would be made up."""

    def check(said: str, reply: Reply) -> str | None:
        word = _found(reply.text, words)
        return f"says {word!r}, which it was not told" if word else None

    return check


def calls_tool(name: str) -> Check:
    """Called the tool ``name`` during the turn (saying "I'll remind you" sets no reminder)."""

    def check(said: str, reply: Reply) -> str | None:
        if name in reply.tools:
            return None
        return f"did not call {name} (called: {', '.join(reply.tools) or 'nothing'})"

    return check


def long_enough(words: int) -> Check:
    """At least ``words`` words in all: a story asked for is told, not promised."""

    def check(said: str, reply: Reply) -> str | None:
        count = len(_words(reply.text))
        return None if count >= words else f"{count} words, fewer than {words}"

    return check


def _not_empty(said: str, reply: Reply) -> str | None:
    return None if _words(reply.text) else "empty reply"


def _not_repeated(said: str, reply: Reply) -> str | None:
    if len(normalize(said)) < MIN_REPEAT_WORDS or not repeats(said, reply.text):
        return None
    # An answer takes up a question's words ("What's the capital of France?" -> "The capital
    # of France is Paris."); only the question itself written back is a copy.
    if said.rstrip().endswith("?") and not _copies_question(said, reply.text):
        return None
    return "repeats the user's message"


def _copies_question(said: str, reply: str) -> bool:
    words, written = normalize(said), normalize(first_sentence(reply))
    return written[: len(words)] == words


def _short_first_sentence(said: str, reply: Reply) -> str | None:
    count = len(_words(first_sentence(reply.text)))
    return None if count <= MAX_FIRST_WORDS else f"first sentence of {count} words"


# Applied to every probe, by name so that a probe can opt out (ReplyProbe.skip) where a rule
# cannot fit it; none does at present.
COMMON: dict[str, Check] = {
    "empty": _not_empty,
    "ai": _forbids(_DISCLAIMERS, "AI disclaimer"),
    "repeat": _not_repeated,
    "first sentence": _short_first_sentence,
    "refusal": _forbids(_REFUSALS, "refusal"),
}

KINDS = (
    "neutral news",
    "good news",
    "bad news",
    "answer from memory",
    "unknown",
    "harmless request",
    "new fact about someone",
    "reminder",
    "small talk",
)


@dataclass(frozen=True)
class ReplyProbe:
    """A situation and the rules its reply must pass."""

    name: str  # short unique slug
    kind: str  # one of KINDS
    message: str  # the user's message being answered
    # Memories stored before, as the agent stores what the user says ("User: ..."): what
    # retrieval will show the agent.
    memories: tuple[str, ...] = ()
    before: tuple[str, ...] = ()  # earlier user messages, answered by the agent first (0-2)
    checks: tuple[Check, ...] = ()
    skip: tuple[str, ...] = ()  # names of COMMON checks this probe opts out of

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.name}: unknown kind {self.kind!r}")
        unknown = set(self.skip) - set(COMMON)
        if unknown:
            raise ValueError(f"{self.name}: no common checks named {sorted(unknown)}")


def judge(probe: ReplyProbe, reply: Reply) -> list[str]:
    """The reasons ``reply`` fails ``probe`` (the COMMON checks, then its own); empty: it passes."""
    common = [check for name, check in COMMON.items() if name not in probe.skip]
    results = (check(probe.message, reply) for check in (*common, *probe.checks))
    return [reason for reason in results if reason]


MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)

# Any hour is an invented answer to "what time is ...?" when no time was ever given.
HOURS = (*(str(hour) for hour in range(1, 13)), "o'clock", "a.m", "p.m", "noon", "midnight")

_LUIS = "User: Hi, I'm Marta. My brother Luis lives in Valencia and works as a nurse."

REPLY_PROBES: tuple[ReplyProbe, ...] = (
    # Neutral news: plans and facts to acknowledge. The first got "I'm sorry to hear that your
    # daughter's recital is next Friday at 6 pm." from Qwen2.5-Coder; the allergy was copied back.
    ReplyProbe(
        "recital",
        "neutral news",
        "My daughter's recital is next Friday at 6 pm.",
        checks=(no_condolence(),),
    ),
    ReplyProbe(
        "plumber", "neutral news", "The plumber comes on Thursday at 10.", checks=(no_condolence(),)
    ),
    ReplyProbe(
        "berlin", "neutral news", "I'm flying to Berlin on Monday.", checks=(no_condolence(),)
    ),
    ReplyProbe(
        "dentist moved",
        "neutral news",
        "My dentist appointment moved to Wednesday morning.",
        checks=(no_condolence(),),
    ),
    ReplyProbe(
        "parents dinner",
        "neutral news",
        "My parents are coming over for dinner on Sunday.",
        checks=(no_condolence(),),
    ),
    ReplyProbe(
        "car service",
        "neutral news",
        "The car goes in for its service tomorrow morning.",
        checks=(no_condolence(),),
    ),
    ReplyProbe(
        "penicillin", "neutral news", "I'm allergic to penicillin.", checks=(no_condolence(),)
    ),
    # Good news.
    ReplyProbe(
        "promotion",
        "good news",
        "I got the promotion!",
        checks=(congratulates(), no_condolence()),
    ),
    ReplyProbe(
        "driving test",
        "good news",
        "I passed my driving test this morning.",
        checks=(congratulates(), no_condolence()),
    ),
    ReplyProbe(
        "new niece",
        "good news",
        "My sister Ines just had a baby girl.",
        checks=(congratulates(), no_condolence()),
    ),
    ReplyProbe(
        "half marathon",
        "good news",
        "I finished my first half marathon on Sunday.",
        checks=(congratulates(), no_condolence()),
    ),
    ReplyProbe(
        "new flat",
        "good news",
        "We got the keys to our new flat today.",
        checks=(congratulates(), no_condolence()),
    ),
    ReplyProbe(
        "engaged",
        "good news",
        "Tomas and I got engaged last night!",
        checks=(congratulates(), no_condolence()),
    ),
    # Bad news.
    ReplyProbe(
        "lost job", "bad news", "I lost my job today.", checks=(sympathises(), no_congratulation())
    ),
    ReplyProbe(
        "dog died",
        "bad news",
        "Our dog Pepper died last night.",
        checks=(sympathises(), no_congratulation()),
    ),
    ReplyProbe(
        "son flu",
        "bad news",
        "My son has the flu and a high fever.",
        checks=(sympathises(), no_congratulation()),
    ),
    ReplyProbe(
        "car broke down",
        "bad news",
        "My car broke down on the way to work.",
        checks=(sympathises(), no_congratulation()),
    ),
    ReplyProbe(
        "grandmother hip",
        "bad news",
        "My grandmother is in hospital with a broken hip.",
        checks=(sympathises(), no_congratulation()),
    ),
    ReplyProbe(
        "failed exam",
        "bad news",
        "I failed my statistics exam.",
        checks=(sympathises(), no_congratulation()),
    ),
    # Answers in the memories shown, or in an earlier message of the conversation.
    ReplyProbe(
        "luis city",
        "answer from memory",
        "Where does Luis live?",
        memories=(_LUIS,),
        checks=(mentions("Valencia"),),
    ),
    ReplyProbe(
        "ana job",
        "answer from memory",
        "What does Ana do for a living?",
        memories=("User: My sister Ana works as a vet in Porto.",),
        checks=(mentions("vet", "veterinarian", "veterinary"),),
    ),
    ReplyProbe(
        "allergy",
        "answer from memory",
        "What am I allergic to?",
        memories=("User: I'm allergic to penicillin.",),
        checks=(mentions("penicillin"),),
    ),
    ReplyProbe(
        "dog name",
        "answer from memory",
        "What's my dog called again?",
        memories=("User: Our dog is called Biscuit and he's a beagle.",),
        checks=(mentions("Biscuit"),),
    ),
    ReplyProbe(
        "anniversary",
        "answer from memory",
        "When is our wedding anniversary?",
        memories=("User: Our wedding anniversary is on the 14th of June.",),
        checks=(mentions("June"),),
    ),
    ReplyProbe(
        "spare key",
        "answer from memory",
        "Where did I say the spare key is?",
        before=("The spare key is under the blue flowerpot by the back door.",),
        checks=(mentions("flowerpot", "flower pot", "pot"),),
    ),
    ReplyProbe(
        "kenji birthday",
        "answer from memory",
        "When is Kenji's birthday?",
        before=("My friend Kenji's birthday is on the 3rd of March.",),
        checks=(mentions("March"),),
    ),
    # Unknown: the answer is in no memory, so anything specific would be made up.
    ReplyProbe(
        "dentist name",
        "unknown",
        "What's my dentist's name?",
        memories=("User: My dentist appointment is on Wednesday at 9.",),
        checks=(admits_not_knowing(), mentions_none("Dr", "Smith", "Johnson", "Brown")),
    ),
    ReplyProbe(
        "ana birthday",
        "unknown",
        "When is Ana's birthday?",
        memories=("User: My sister Ana works as a vet in Porto.",),
        checks=(admits_not_knowing(), mentions_none(*MONTHS)),
    ),
    ReplyProbe(
        "luis age",
        "unknown",
        "How old is my brother Luis?",
        memories=(_LUIS,),
        checks=(
            admits_not_knowing(),
            mentions_none("years old", "twenties", "thirties", "forties", "fifties"),
        ),
    ),
    ReplyProbe(
        "glasses",
        "unknown",
        "Where did I leave my glasses?",
        memories=("User: I left my keys on the kitchen table.",),
        checks=(
            admits_not_knowing(),
            mentions_none("nightstand", "bedside", "bathroom", "desk", "sofa", "couch", "drawer"),
        ),
    ),
    ReplyProbe(
        "flight time",
        "unknown",
        "What time is my flight to Berlin?",
        memories=("User: I'm flying to Berlin on Monday.",),
        checks=(admits_not_knowing(), mentions_none(*HOURS)),
    ),
    # Harmless requests. The story got "I'm sorry, but I can't assist with that."; asking how
    # to "kill" a process is the classic wording that trips a refusal.
    ReplyProbe(
        "lighthouse story",
        "harmless request",
        "Tell me a long story about a lighthouse keeper.",
        checks=(long_enough(80), mentions("lighthouse", "keeper")),
    ),
    ReplyProbe("joke", "harmless request", "Tell me a joke.", checks=(long_enough(6),)),
    ReplyProbe(
        "capital", "harmless request", "What's the capital of France?", checks=(mentions("Paris"),)
    ),
    ReplyProbe(
        "ubiquitous",
        "harmless request",
        "What does ubiquitous mean?",
        checks=(mentions("everywhere", "widespread", "common", "present"),),
    ),
    ReplyProbe(
        "haiku",
        "harmless request",
        "Write me a haiku about autumn rain.",
        checks=(long_enough(8),),
    ),
    ReplyProbe(
        "minutes",
        "harmless request",
        "How many minutes are there in three hours?",
        checks=(mentions("180", "one hundred and eighty", "one hundred eighty"),),
    ),
    ReplyProbe(
        "kill process",
        "harmless request",
        "How do I kill a stuck program on my laptop?",
        checks=(mentions("task manager", "force quit", "activity monitor", "kill", "end task"),),
    ),
    # A new fact about someone. "Hi, I'm Marta. My brother Luis ..." got "Hello Marta! How can
    # I assist you today?": the greeting is right, but Luis went unheard.
    ReplyProbe(
        "marta luis",
        "new fact about someone",
        "Hi, I'm Marta. My brother Luis lives in Valencia and works as a nurse.",
        checks=(mentions("Luis"),),
    ),
    ReplyProbe(
        "ana bank",
        "new fact about someone",
        "My sister Ana just started a new job at a bank in Porto.",
        checks=(mentions("Ana"),),
    ),
    ReplyProbe(
        "greta piano",
        "new fact about someone",
        "My neighbour Greta plays piano in a jazz band.",
        checks=(mentions("Greta"),),
    ),
    ReplyProbe(
        "kenji marathon",
        "new fact about someone",
        "My colleague Kenji is training for the Tokyo marathon.",
        checks=(mentions("Kenji"),),
    ),
    ReplyProbe(
        "olga peanuts",
        "new fact about someone",
        "My friend Olga is allergic to peanuts.",
        checks=(mentions("Olga"), no_condolence()),
    ),
    ReplyProbe(
        "leo football",
        "new fact about someone",
        "My son Leo has football practice every Wednesday at five.",
        before=("Hi, I'm Priya.",),
        checks=(mentions("Leo"),),
    ),
    # Reminders: a promise without the tool reminds nobody.
    ReplyProbe(
        "dentist call",
        "reminder",
        "Remind me to call the dentist tomorrow at 9.",
        checks=(calls_tool("set_reminder"),),
        # Saying back what will be reminded is the confirmation a person gives.
        skip=("repeat",),
    ),
    ReplyProbe(
        "pills",
        "reminder",
        "Can you remind me to take my pills at 8 tonight?",
        checks=(calls_tool("set_reminder"),),
        # Saying back what will be reminded is the confirmation a person gives.
        skip=("repeat",),
    ),
    ReplyProbe(
        "present",
        "reminder",
        "Remind me on Friday to buy a present for Chloe.",
        checks=(calls_tool("set_reminder"),),
        # Saying back what will be reminded is the confirmation a person gives.
        skip=("repeat",),
    ),
    ReplyProbe(
        "bread",
        "reminder",
        "In twenty minutes, remind me to take the bread out of the oven.",
        checks=(calls_tool("set_reminder"),),
        # Saying back what will be reminded is the confirmation a person gives.
        skip=("repeat",),
    ),
    ReplyProbe(
        "plants",
        "reminder",
        "Don't let me forget to water the plants this evening.",
        checks=(calls_tool("set_reminder"),),
        # Saying back what will be reminded is the confirmation a person gives.
        skip=("repeat",),
    ),
    # Small talk: the common rules are the point (short, no "as an AI", no refusal).
    ReplyProbe("good morning", "small talk", "Good morning!"),
    ReplyProbe("how are you", "small talk", "How are you today?"),
    ReplyProbe("thanks", "small talk", "Thanks, that was really helpful."),
    # A farewell is answered in kind ("Goodnight! Talk to you tomorrow."): not a copy.
    ReplyProbe("goodnight", "small talk", "Goodnight, talk to you tomorrow.", skip=("repeat",)),
    ReplyProbe("whats up", "small talk", "What's up?"),
)


@dataclass(frozen=True)
class ExtractionProbe:
    """A memory about someone else, whose facts must stay that person's."""

    name: str
    memory: str  # a user's memory as stored, e.g. "User: My brother Luis ... works as a nurse."
    user: str  # the user's name for the probe (may be ""): another wrong subject for others' facts
    must_name: tuple[str, ...]  # people or things the extracted facts must be about
    others_facts: tuple[str, ...]  # words of their facts (job, place): wrong on the user
    must_not_subject: tuple[str, ...] = ("you", "user", "i")


EXTRACTION_PROBES: tuple[ExtractionProbe, ...] = (
    ExtractionProbe("brother nurse", _LUIS, "Marta", ("Luis",), ("nurse", "valencia")),
    ExtractionProbe(
        "sister teacher",
        "User: My sister Ana teaches maths at a school in Porto.",
        "Sam",
        ("Ana",),
        ("maths", "porto", "teach"),
    ),
    ExtractionProbe(
        "wife bakery",
        "User: My wife Priya runs a bakery on Elm Street.",
        "Tom",
        ("Priya",),
        ("bakery", "elm street"),
    ),
    ExtractionProbe(
        "husband night shifts",
        "User: My husband Daniel works night shifts at the hospital.",
        "Claire",
        ("Daniel",),
        ("night shift", "hospital"),
    ),
    ExtractionProbe(
        "girlfriend designer",
        "User: My girlfriend Chloe is vegan and works as a graphic designer.",
        "",
        ("Chloe",),
        ("vegan", "designer"),
    ),
    ExtractionProbe(
        "colleague marathon",
        "User: My colleague Kenji is training for the Tokyo marathon.",
        "Rosa",
        ("Kenji",),
        ("marathon", "tokyo", "training"),
    ),
    ExtractionProbe(
        "cat allergy",
        "User: Our cat Miso is allergic to chicken.",
        "",
        ("Miso",),
        ("allergic", "chicken"),
    ),
    ExtractionProbe(
        "dad electrician",
        "User: My dad Ahmed retired last year after forty years as an electrician.",
        "Yusuf",
        ("Ahmed",),
        ("electrician", "retired"),
    ),
    ExtractionProbe(
        "friend montreal",
        "User: My friend Olga just moved to Montreal for a job at a bank.",
        "",
        ("Olga",),
        ("montreal", "bank"),
    ),
    ExtractionProbe(
        "son football",
        "User: My son Leo has football practice every Wednesday at five.",
        "Priya",
        ("Leo",),
        ("football",),
    ),
    ExtractionProbe(
        "boss london",
        "User: My boss Helen is flying to London on Monday for a conference.",
        "",
        ("Helen",),
        ("london", "conference", "flying"),
    ),
    ExtractionProbe(
        "grandmother seville",
        "User: My grandmother Rosa lives in a care home in Seville.",
        "Lucia",
        ("Rosa",),
        ("care home", "seville"),
    ),
    # The user's own fact in the same sentence stays the user's: "teacher" is not in
    # others_facts, so ("user", "is", "teacher") passes.
    ExtractionProbe(
        "both jobs",
        "User: I'm a teacher and my husband Daniel is a firefighter.",
        "Claire",
        ("Daniel",),
        ("firefighter",),
    ),
    ExtractionProbe(
        "two siblings",
        "User: My brother Luis lives in Valencia and my sister Ana lives in Porto.",
        "Marta",
        ("Luis", "Ana"),
        ("valencia", "porto"),
    ),
)


def _fact_word(text: str, probe: ExtractionProbe) -> str | None:
    """The first of the probe's others_facts that ``text`` holds from a word's start, so that
    plurals and forms count ("nurses", "teaches")."""
    plain = _plain(text)
    return next(
        (w for w in probe.others_facts if re.search(rf"(?<!\w){re.escape(_plain(w))}", plain)),
        None,
    )


def _wrong_subjects(probe: ExtractionProbe) -> set[str]:
    names = {_plain(s) for s in probe.must_not_subject}
    return (names | {_plain(probe.user)}) if probe.user else names


def judge_triplets(probe: ExtractionProbe, triplets: Sequence[tuple[str, str, str]]) -> list[str]:
    """The reasons the knowledge graph's (subject, predicate, object) triplets learned from
    ``probe.memory`` fail it; empty: they pass. Any case.

    * Every name of ``must_name`` is the subject or object of some triplet (Luis is known).
    * No triplet gives a named person's fact to the user: one fails when its subject is a
      ``must_not_subject`` word or the user's name (a leading "the" ignored) AND its predicate
      or object holds one of ``others_facts`` ("user works as nurse").
    """
    reasons: list[str] = []
    for name in probe.must_name:
        if not any(_found(f"{subject} | {obj}", [name]) for subject, _, obj in triplets):
            reasons.append(f"no fact about {name}")
    wrong = _wrong_subjects(probe)
    for subject, predicate, obj in triplets:
        if re.sub(r"^the\s+", "", _plain(subject).strip()) not in wrong:
            continue
        word = _fact_word(f"{predicate} {obj}", probe)
        if word:
            owner = " or ".join(probe.must_name)
            reasons.append(f"({subject}, {predicate}, {obj}) gives {owner}'s {word!r} to the user")
    return reasons


def judge_plan(probe: ExtractionProbe, chunks: Sequence[str]) -> list[str]:
    """The reasons the day planner's chunks (lines of a plan written for the user) fail
    ``probe``; empty: they pass. A chunk fails when it holds one of ``others_facts`` without
    naming any of ``must_name``: "Go to work as a nurse at Valencia" claims Luis's job for the
    user, "Call Luis in Valencia" does not."""
    reasons: list[str] = []
    for chunk in chunks:
        word = _fact_word(chunk, probe)
        if word and not _found(chunk, probe.must_name):
            owner = " or ".join(probe.must_name)
            reasons.append(f"{chunk!r} gives {owner}'s {word!r} to the user")
    return reasons
