"""Sympathy only where something went wrong.

The packaged models open replies to plain news with condolences: "I'm sorry to hear that ..."
for a date in the diary, a moved appointment, a fact about the user's health that is no
misfortune (docs/BENCHMARKS.md, "Judgement"). Whether the user's words tell of
trouble is plain to see in them, so code decides it: when they name none (no illness, loss,
failure, damage, bad feeling), a reply opening with sympathy is held back like a refusal and
asked for once more, held to open willingly (refusal.py), where "Oh" still lets a real
misfortune the list missed be met with "Oh no, ...". The list errs towards trouble: a word of
it in a neutral message only leaves the model's opening as it was.
"""

from __future__ import annotations

import re

# Words that tell of something going wrong, as stems where their forms differ.
_TROUBLE = re.compile(
    r"\b("
    # health
    r"sick|ill|illness|unwell|flu|fever|cough|covid|infection|pain|painful|hurts?|hurt|"
    r"injur\w*|wounded|bleeding|hospital\w*|surgery|emergency|a&e|cancer|tumou?r|disease|"
    r"diagnos\w*|migraine|headache|broken|broke|fractur\w*|sprain\w*|accident|"
    # loss
    r"died|dies|dead|death|passed away|funeral|los[st]|losing|loss|grie\w*|miscarri\w*|"
    # failure and rejection
    r"fail\w*|rejected|fired|laid off|redundan\w*|dumped|divorc\w*|break ?up|broke up|"
    r"split up|evicted|debt|bankrupt\w*|"
    # damage and mishaps
    r"crash\w*|stolen|robbed|burgl\w*|flood\w*|leak\w*|fire|damaged|ruined|cancell?ed|"
    r"missed|stuck|stranded|delayed|late again|"
    # feelings
    r"sad|sadly|upset|depress\w*|lonely|stress\w*|anxious|anxiety|worried|worry|scared|"
    r"afraid|terrible|awful|horrible|miserable|exhausted|frustrat\w*|angry|disappoint\w*|"
    r"unhappy|cry|crying|cried|struggl\w*|hate|bad day|can't sleep|not well|not good|"
    r"not great|rough|tough|hard time|nightmare"
    r")\b",
    re.IGNORECASE,
)

# How a reply opens with sympathy (compared lower-cased, spaces collapsed).
SYMPATHY_OPENINGS = (
    "i'm sorry to hear",
    "i'm so sorry to hear",
    "i am sorry to hear",
    "sorry to hear",
    "i'm sorry for your",
    "i'm so sorry for your",
    "i'm sorry about",
    "i'm so sorry about",
    "i'm sorry that",
    "i'm so sorry that",
    "i'm sorry you",
    "i'm so sorry you",
    "oh no",
    "that's too bad",
    "that's a shame",
    "what a shame",
)


def sympathy_due(words: str) -> bool:
    """Whether ``words`` (the user's) tell of something that went wrong."""
    return _TROUBLE.search(words.replace("\u2019", "'")) is not None


def unwanted_openings(words: str) -> tuple[str, ...]:
    """The openings a reply to ``words`` should not have beyond a refusal's: sympathy, when
    nothing in them went wrong (nothing for anything but the user's own words: empty)."""
    return () if not words.strip() or sympathy_due(words) else SYMPATHY_OPENINGS
