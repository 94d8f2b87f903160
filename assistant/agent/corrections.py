"""Whether the user's message corrects the assistant's last reply, by rule (no LLM call: it is
read at every turn, and a wrong "yes" costs a memory a little utility, nothing more).

A correction is said in a few set ways: "no, ..." to a statement (to a question, "no" is an
answer), "that's wrong" / "that's not right" / "you got it wrong", "actually it's ...",
"it's actually ...", "I said X, not Y". The rules lean towards missing a correction rather
than inventing one: "No thanks", "no problem", "Actually, can you ...?", "What's wrong with
my car?" are not corrections.
"""

from __future__ import annotations

import re

_FLAGS = re.IGNORECASE
_APOSTROPHE = re.compile("[\u2018\u2019`]")

# Anywhere in the message: the reply, or the user's own earlier words, called wrong.
_SAID_WRONG = re.compile(
    r"\b(?:that|this|you|that answer)\s*(?:'s|'re|\bis|\bare|\bwas|\bwere)\s+"
    r"(?:(?:just\s+|simply\s+)?wrong|incorrect|mistaken|not\s+(?:right|true|correct|it|"
    r"what\s+i\s+(?:said|meant|told\s+you)))\b"
    r"|\byou(?:'ve|\s+have)?\s+(?:got|gotten)\s+(?:it|that|this|them|him|her)\s+(?:all\s+)?wrong\b"
    r"|\byou(?:'re|\s+are)?\s+(?:mixing|mixed)\s+(?:it|that|this|them|things|something)?\s*up\b"
    r"|\bi\s+(?:never\s+said|didn't\s+say|did\s+not\s+say)\b"
    r"|\bi\s+(?:said|meant|told\s+you)\s+(?:[\w'-]+\s+){0,3}[\w'-]+,?\s+not\b",
    _FLAGS,
)
# "Her name is actually Ottilie", "it's actually at four": a statement, not "What is actually
# on ...?"
_STATES_ACTUALLY = re.compile(r"\b(?:is|was|'s|are|were)\s+actually\b", _FLAGS)
# At the start of the message.
_OPENS_WRONG = re.compile(
    r"^\W*(?:wrong|incorrect|not\s+(?:quite|exactly|true|right|correct))\b", _FLAGS
)
# "Actually, ..." about what was said (not "Actually, can you ..." or "Actually I need ...").
_OPENS_ACTUALLY = re.compile(
    r"^\W*(?:actually|in\s+fact)\b[\s,]*(?:it|its|it's|that|that's|the|she|she's|he|he's|"
    r"they|they're|her|his|their|my|our|we|there)\b",
    _FLAGS,
)
# "No" and the like: a correction of a statement, an answer to a question.
_OPENS_NO = re.compile(r"^\W*(?:no+|nope|nah|no\s+no)\b(?P<rest>.*)$", _FLAGS | re.DOTALL)
# "No thanks", "no problem", "no way!": a "no" that disputes nothing.
_NO_BUT_FINE = re.compile(
    r"^\W*(?:thanks?|thank\s+you|worries|problem|problems|need|rush|hurry|way|doubt|wonder|"
    r"kidding|idea|clue|biggie|sweat|matter|that's\s+(?:fine|ok|okay|all)|"
    r"it's\s+(?:fine|ok|okay)|all\s+good|never\s*mind|not\s+(?:now|yet|today|really))\b",
    _FLAGS,
)
_QUESTION_END = re.compile(r"\?\W*$")


def corrects(message: str, reply: str) -> bool:
    """Whether ``message`` (the user's) corrects ``reply`` (the assistant's just before)."""
    text = _APOSTROPHE.sub("'", message).strip()
    if not text:
        return False
    if _SAID_WRONG.search(text) or _OPENS_WRONG.search(text):
        return True
    if _OPENS_ACTUALLY.search(text) or _STATES_ACTUALLY.search(text):
        return not _QUESTION_END.search(text)
    opened = _OPENS_NO.match(text)
    if opened is None or _NO_BUT_FINE.match(opened.group("rest")):
        return False
    # The reply asked something ("Shall I set a reminder?"): "no" answers it.
    return not _QUESTION_END.search(reply.strip())
