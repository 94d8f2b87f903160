"""What the user said that bears on a question about their own life, quoted next to the
question in the order it was said.

Asked about something the user said earlier in the conversation, the 0.5B model answers from
whatever it finds first in the window: after the user said a fact had changed, it gave the old
one, though the newer words were in view further down; and it often answered with a fact about
another person it had been told of. Small models heed the last lines before the question most,
so those lines hold the user's own statements that share a word with the question (a person the
question names by their relation counts by name too, as the human block links them: who "my
brother" is), the latest last, marked so.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from assistant.agent.checks.text import straight

# How an answer opens that says what the user told of what it asks (checks/grounding.py,
# checks/evasion.py), in the user's words turned to speak to them (checks/perspective.py).
RECALLED = "You told me that"
# How many statements are quoted at most (the most words in common first, then the newest).
STATEMENTS = 3
# Words that tell nothing of what a question is about.
# fmt: off
STOP_WORDS = frozenset((
    "a", "an", "the", "and", "or", "but", "if", "of", "in", "on", "at", "to", "for", "from",
    "with", "by", "about", "as", "into", "than", "then", "so", "is", "are", "was", "were", "be",
    "been", "being", "am", "do", "does", "did", "doing", "have", "has", "had", "having", "i",
    "i'm", "i've", "i'll", "i'd", "me", "my", "mine", "we", "our", "us", "you", "your", "yours",
    "it", "it's", "its", "this", "that", "these", "those", "there", "here", "what", "what's",
    "which", "who", "who's", "whom", "whose", "when", "where", "why", "how", "can", "could",
    "would", "should", "will", "shall", "may", "might", "must", "not", "no", "yes", "any", "some",
    "all", "again", "now", "still", "just", "also", "too", "very", "really", "please", "tell",
    "know", "remember", "told", "say", "said", "ask", "asked", "thing", "things", "something",
    "one", "ever", "today", "tonight",
))
# fmt: on
_WORD = re.compile(r"[a-z][a-z']*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def stem(word: str) -> str:
    """``word`` as compared: lower case, without a possessive or a common ending."""
    word = word.lower().removesuffix("'s")
    for ending in ("ing", "ed", "es", "s"):
        if word.endswith(ending) and len(word) - len(ending) >= 3:
            word = word[: -len(ending)]
            # "running", "stopped": the consonant doubled before the ending ("passed" keeps
            # its own).
            if ending in ("ing", "ed") and word[-1] == word[-2] and word[-1] not in "aeioulsz":
                word = word[:-1]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def terms(text: str) -> set[str]:
    """The words of ``text`` that say what it is about, as compared."""
    return {stem(word) for word in _WORD.findall(straight(text).lower()) if word not in STOP_WORDS}


# Lines of the human block that name no one else: the user's own name is left out (a question
# about someone else's name is not about it), the others link their key to their words.
_OWN_NAME = "name"


def user_name(human: str) -> str | None:
    """The user's name as the human block has it ("Name: ...")."""
    for line in human.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() == _OWN_NAME and value.strip():
            return value.strip().split()[0]
    return None


def _linked(human: str) -> dict[str, set[str]]:
    """Each word of the human block's lines with the words that name the same thing: a
    relation and the person's name ("Cousin: Tobiah"), a line's key and what it holds ("Work:
    glazier")."""
    linked: dict[str, set[str]] = {}
    for line in human.splitlines():
        key, _, value = line.partition(":")
        if not value.strip() or key.strip().lower() == _OWN_NAME:
            continue
        keys, values = terms(key), terms(value)
        for word in keys:
            linked.setdefault(word, set()).update(values)
        for word in values:
            linked.setdefault(word, set()).update(keys)
    return linked


def linked_terms(question: str, human: str = "") -> dict[str, set[str]]:
    """Each term of ``question`` with the words that name the same thing in the human block
    (itself among them): "brother" with his name."""
    linked = _linked(human)
    return {term: {term, *linked.get(term, ())} for term in terms(question)}


def _statements(said: Sequence[str]) -> Iterator[str]:
    """The sentences of the user's messages ``said`` that state something (no question, nor a
    request to be told, no bracketed note), oldest first."""
    for message in said:
        for statement in _SENTENCE.split(straight(message).strip()):
            if not statement or statement.endswith("?") or statement.startswith("["):
                continue
            if not asks_for_told(statement):
                yield statement


def bearing_on(question: str, said: Sequence[str], human: str = "") -> list[str]:
    """Of the sentences of the user's earlier messages ``said`` (oldest first), those that
    share a word with ``question`` (up to ``STATEMENTS``; no question), oldest first; for a
    question about the user as a whole, their latest sentences about themself."""
    if about_themself(question):
        return [s for s in _statements(said) if _OWN_WORDS.search(s)][-SELF_STATEMENTS:]
    wanted = {word for words in linked_terms(question, human).values() for word in words}
    scored = []
    for order, statement in enumerate(_statements(said)):
        shared = len(wanted & terms(statement))
        if shared:
            scored.append((shared, order, statement))
    best = sorted(scored, key=lambda item: (item[0], item[1]), reverse=True)[:STATEMENTS]
    return [statement for _, _, statement in sorted(best, key=lambda item: item[1])]


# A question that asks for something told: who someone is, what, when, where, which, how;
# asked as such, or as a request to be reminded of it or told it again.
_ASKS = re.compile(
    r"^\s*(?:(?:please\s+)?(?:can|could|would|will) you\s+)?"
    r"(?:(?:(?:do|did) you (?:remember|recall|know)\s+)?(?:who|what|when|where|which|how)\b"
    r"|(?:please\s+)?(?:remind|tell) me(?:\s+again)?,?\s+(?:who|what|when|where|which|how)\b"
    # "Remind me about ..." sets a reminder (routing.py); "tell me about ..." asks.
    r"|(?:please\s+)?tell me(?:\s+again)?\s+about\b)",
    re.IGNORECASE,
)
# A question about the user as a whole, and the words of a sentence they said about themself.
_ABOUT_THEMSELF = re.compile(r"\babout (?:me|myself)\b", re.IGNORECASE)
_OWN_WORDS = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine)\b", re.IGNORECASE)
# How many of their latest sentences about themself such a question is shown at most.
SELF_STATEMENTS = 5


def asks_for_told(text: str) -> bool:
    """Whether ``text`` asks for something that may have been told: a question ("Where does
    she work?") or a request to be reminded of it ("Tell me again what he said.")."""
    return bool(_ASKS.match(straight(text)))


# How a request opens that asks for what the user told, as told: to be reminded of it, whether
# it is remembered, what was said or is known of someone.
_RECALL = re.compile(
    r"^\s*(?:(?:please\s+)?(?:can|could|would|will) you\s+)?(?:please\s+)?"
    r"(?:remind me(?:\s+again)?,?\s+(?:who|what|when|where|which|how)\b"
    r"|tell me again\b"
    r"|(?:do|did) you (?:remember|recall)\b"
    r"|what (?:did|have) i (?:tell|told|say|said|mention|mentioned)\b"
    r"|what do you (?:know|remember) about\b)",
    re.IGNORECASE,
)


def asks_to_recall(text: str) -> bool:
    """Whether ``text`` asks for what the user told as told ("Remind me what ...", "Do you
    remember ...", "What do you know about ..."): its answer says what they told."""
    return bool(_RECALL.match(straight(text)))


def about_themself(question: str) -> bool:
    """Whether ``question`` asks about the user as a whole ("What do you know about me?")."""
    return asks_for_told(question) and bool(_ABOUT_THEMSELF.search(straight(question)))


# Words that ask for the form of an answer rather than name what it is about: the line that
# holds the answer seldom says them ("he's eleven").
FORM_WORDS = frozenset(
    stem(word)
    for word in ("name", "called", "call", "old", "age", "many", "much", "long", "often", "number")
)
# Words of a question that only ask, which the words that answer it do not hold ("what is
# wrong with", "remind me what").
# fmt: off
_ONLY_ASKING = FORM_WORDS | frozenset(
    stem(word)
    for word in (
        "far", "big", "tall", "soon", "late", "happened", "kind", "sort", "time", "day", "wrong",
        "matter", "remind", "recall",
    )
)
# fmt: on


def told_answer(question: str, said: Sequence[str], human: str = "") -> list[str]:
    """What the user told that answers ``question``: the sentences of theirs (``said``) and the
    lines of the human block that hold every word it asks about (a relation or its person's
    name), beyond the words that only ask ("how far", "what happened", "name"); for a
    question about them as a whole, their latest sentences about themself and the human
    block's lines. The 0.5B model said it did
    not know who someone was, how far the user ran or when their thesis was due, with the
    user's words about it just above."""
    if not asks_for_told(question):
        return []
    lines = [
        line
        for line in human.splitlines()
        if line.partition(":")[2].strip() and line.partition(":")[0].strip().lower() != _OWN_NAME
    ]
    if about_themself(question):
        return [*bearing_on(question, said), *lines]
    wanted = [
        names for term, names in linked_terms(question, human).items() if term not in _ONLY_ASKING
    ]
    if not wanted:
        return []
    found = (*bearing_on(question, said, human), *lines)
    return [line for line in found if all(names & terms(line) for names in wanted)]


def answer_told(question: str, said: Sequence[str], human: str = "") -> bool:
    """Whether ``question`` asks about something the user told of (``told_answer``)."""
    return bool(told_answer(question, said, human))


# Stop words with an ending ("says", "knows"), which ``terms`` keeps, stemmed.
_STOP_STEMS = frozenset(stem(word) for word in STOP_WORDS)


def answering_words(question: str, told: Sequence[str]) -> set[str]:
    """The words of what was ``told`` that a reply answering ``question`` says: those the
    question does not already hold, nor only asks with."""
    found = {word for line in told for word in terms(line)}
    return found - terms(question) - _ONLY_ASKING - _STOP_STEMS


# How the note opens: a list like the memories', not a sentence a reply could open with.
TOLD_HEAD = "What the user said of this before, oldest first"


def told_note(question: str, said: Sequence[str], human: str = "") -> str:
    """The note listing what the user said that bears on ``question`` ("" for nothing)."""
    statements = bearing_on(question, said, human)
    if not statements:
        return ""
    lines = "\n".join(f"- {' '.join(statement.split())}" for statement in statements)
    where = " (where they differ, the last holds)" if len(statements) > 1 else ""
    return f"{TOLD_HEAD}{where}:\n{lines}"
