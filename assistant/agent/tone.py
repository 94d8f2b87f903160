"""The tone a reply to the user's words opens in: sympathy for trouble, cheer for good news,
neither for a plain fact.

The packaged models open replies to news with whatever opening they used last: condolences for
a date in the diary, and, held to open willingly after a refused opening, "Good news!" for a van
that broke down, a friend who died, a diagnosis. Whether the user's words tell of trouble or of
something that went well is plain in them, so code decides it: a reply to trouble may not open
with cheer, one to a plain fact not with sympathy or with news to celebrate, and the willing
openings a re-ask is held to (checks/opening.py) are those of the tone. Words of both hold
neither back; the trouble list errs towards trouble, and gladness that names no good event
("finally", "great") is taken as said of the trouble beside it.
"""

from __future__ import annotations

import re
from enum import Enum

from assistant.agent.checks.text import straight


class Tone(Enum):
    PLAIN = "plain"
    TROUBLE = "trouble"
    GOOD = "good"
    # Words of both ("lost her first tooth, so proud"): neither sympathy nor cheer is held back.
    MIXED = "mixed"


# Words that tell of something going wrong, as stems where their forms differ.
_TROUBLE = re.compile(
    r"\b("
    # health
    r"sick|ill|illness|unwell|flu|fever|cough|covid|infection|pain|painful|hurts?|hurt|"
    r"injur\w*|wounded|bleeding|hospital\w*|surgery|emergency|a&e|cancer|tumou?r|disease|"
    r"diagnos\w*|migraine|headache|broken|broke|fractur\w*|sprain\w*|accident|"
    r"allerg\w*|intoleran\w*|diabet\w*|asthma|coeliac|celiac|"
    # loss
    r"died|dies|dead|death|passed away|funeral|los[st]|losing|loss|grie\w*|miscarri\w*|"
    # failure and rejection
    r"fail\w*|rejected|fired|laid off|redundan\w*|dumped|divorc\w*|break ?up|broke up|"
    r"split up|evicted|debt|bankrupt\w*|"
    # damage and mishaps
    r"crash\w*|stolen|robbed|burgl\w*|flood\w*|leak\w*|fire|damaged|ruined|cancell?ed|"
    r"missed|stuck|stranded|delayed|late again|closing down|shut(?:ting)? down|"
    r"needs? (?:a )?new|needs? (?:fixing|repairs?|replacing)|won't start|stopped working|"
    # feelings, and news said to be bad
    r"sad|sadly|upset|depress\w*|lonely|stress\w*|anxious|anxiety|worried|worry|scared|"
    r"afraid|terrible|awful|horrible|miserable|exhausted|frustrat\w*|angry|disappoint\w*|"
    r"unhappy|cry|crying|cried|struggl\w*|hate|bad day|can't sleep|not well|not good|"
    r"not great|rough|tough|hard time|nightmare|bad news|annoy\w*|unfortunately"
    r")\b",
    re.IGNORECASE,
)
# Words that tell of something that went well: an event, or trouble that ended.
_GOOD = re.compile(
    r"\b("
    r"promot\w*|accepted|won(?!'t)|win|winning|passed (?:my|the|his|her|their|our)|graduat\w*|"
    r"engaged|married|wedding|pregnan\w*|born|new (?:job|home|house|flat|car|baby)|"
    r"got the job|hired|raise|bonus|signed|proud|celebrat\w*|birthday|anniversary|"
    r"recovered|healed|went well|all clear|better now|back home|made it"
    r")\b",
    re.IGNORECASE,
)
# Words glad of something without saying what went well: with trouble they are said of the
# trouble ("finally broke down for good", "great, the boiler again"), so they hold nothing
# back there.
_GLAD = re.compile(
    r"\b(?:(?:finally|excited|thrilled|delighted|happy|glad|great|amazing|wonderful|"
    r"fantastic|brilliant)\b|news!)",
    re.IGNORECASE,
)
# News the user calls good or bad: bad news is trouble whatever else it holds ("bad news, I
# wasn't promoted"), unless they call some of it good too.
_SAID_GOOD = re.compile(r"\b(?:good|great|big|happy) news\b", re.IGNORECASE)
_SAID_BAD = re.compile(r"\b(?:bad|sad|terrible|awful) news\b", re.IGNORECASE)


def tone_of(words: str) -> Tone:
    """The tone of a reply to the user's ``words``."""
    text = straight(words)
    said_good, said_bad = _SAID_GOOD.search(text), _SAID_BAD.search(text)
    if said_good and said_bad:
        return Tone.MIXED
    if said_bad:
        return Tone.TROUBLE
    trouble = _TROUBLE.search(text) is not None
    if said_good or _GOOD.search(text) is not None:
        return Tone.MIXED if trouble else Tone.GOOD
    if trouble:
        return Tone.TROUBLE
    return Tone.GOOD if _GLAD.search(text) is not None else Tone.PLAIN


def sympathy_due(words: str) -> bool:
    """Whether ``words`` (the user's) tell of something that went wrong."""
    return tone_of(words) in (Tone.TROUBLE, Tone.MIXED)


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
    "sorry about",
    "sorry for your",
    "sorry that",
    "so sorry",
    "oh no",
    "oh dear",
    "that's awful",
    "that's terrible",
    "how awful",
    "how sad",
    "that's too bad",
    "that's a shame",
    "what a shame",
)
# How a reply opens that announces good news: never for a plain fact ("Good news!" for a
# diet, "Good for you!" for a brother's job).
NEWS_CHEERS = (
    *(
        head + news
        for head in ("", "that's ", "that's a ", "that is ", "what ", "what a ")
        for news in ("good news", "great news")
    ),
    "good for you",
)
# How a reply opens with cheer of any kind: never for trouble ("That sounds like a good idea!"
# for a broken clutch).
_CHEER_WORDS = ("good", "great", "wonderful", "fantastic", "amazing", "awesome", "lovely", "nice")
_CHEER_HEADS = ("", "that's ", "that is ", "that sounds ", "that sounds like ", "what ")
CHEER_OPENINGS = (
    *NEWS_CHEERS,
    *(
        head + article + word
        for head in _CHEER_HEADS
        for article in (("", "a ") if head else ("",))
        for word in _CHEER_WORDS
        if not (head == "" and word == "good")  # "Good morning", "Good to know"
    ),
    "congratulations",
    "congrats",
    "excellent",
    "how exciting",
    "how wonderful",
    "i'm glad",
    "i'm so glad",
    "i'm happy",
    "glad to hear",
    "happy to hear",
    "yay",
)


def unwanted_openings(tone: Tone) -> tuple[str, ...]:
    """The openings a reply in ``tone`` should not have beyond a refusal's: cheer for
    trouble; sympathy for anything else, and news to celebrate for a plain fact."""
    return {
        Tone.TROUBLE: CHEER_OPENINGS,
        Tone.GOOD: SYMPATHY_OPENINGS,
        Tone.PLAIN: SYMPATHY_OPENINGS + NEWS_CHEERS,
        Tone.MIXED: (),
    }[tone]


# The willing openings a reply asked for again may have besides the plain ones (opening.py's
# WILLING_OPENINGS), by tone: held to the plain ones alone, the 0.5B model met bad news with
# "That's great!", so trouble gets sympathy in place of "That".
_WILLING_BY_TONE = {
    Tone.PLAIN: ((), ()),
    Tone.MIXED: ((), ()),
    Tone.GOOD: (("Congratulations", "Good", "Great"), ()),
    Tone.TROUBLE: (("Oh no", "I'm sorry to hear", "Sorry to hear"), ("That", "Yes", "Sure")),
}


def willing_for(tone: Tone, openings: tuple[str, ...]) -> tuple[str, ...]:
    """``openings`` (the plain willing ones) as the ``tone`` has them."""
    added, left_out = _WILLING_BY_TONE[tone]
    return (*added, *(word for word in openings if word not in left_out))
