"""Requests whose first step code can choose, so that a small model cannot talk instead of
acting: asked to be reminded, the 1.5B model wrote "Okay, I'll remind you to call the dentist
tomorrow at 9." and set nothing, in 5 of 5 probes (docs/BENCHMARKS.md, "Judgement"). The step
is then held to that tool's schema (or offered only that tool); the model still writes its
arguments, and answers the user in the next step. A stronger endpoint would call the same
tool."""

from __future__ import annotations

import re
from collections.abc import Collection

# "Remind me to ...", "Don't let me forget ...", "Set a reminder ...": a reminder; "Remind me
# what Ana said" or "remind me who that was" asks the memory instead.
_REMINDER = re.compile(
    r"\bremind me\b(?!,? (?:what|who|whom|whose|where|which|why|how|whether|if|again what)\b)"
    r"|\b(?:don't|do not|dont) let me forget\b"
    r"|\b(?:set|add|make|create|put in) (?:a|an|me a) reminder\b"
    r"|\bmake sure i (?:remember|don't forget|do not forget)\b"
    # A timer is a reminder in so many minutes: the 0.5B model wrote the action itself (2.2 s
    # before anything was said) and set it for 09:00 the next day.
    r"|\b(?:set|start|put on) (?:a|an|me a) (?:\w+ )?timer\b",
    re.IGNORECASE,
)


# "Tell me a story", "write me a haiku about rain", "can you tell me a joke": said at once. The
# 1.5B model handed "Tell me a short story about a lighthouse keeper." to a background task,
# which took 138 s and reported a one-line summary instead of the story (tried in tmux).
_SAY_IT_NOW = re.compile(
    r"^(?:(?:can|could|would|will) you |please )?(?:tell|write|give|make up|sing|recite) "
    r"(?:me |us )?(?:a |an |another |one more |some )?(?:\w+ ){0,3}?"
    r"(?:story|stories|joke|jokes|poem|haiku|limerick|riddle|rhyme|song|fact|fun fact|quote)\b",
    re.IGNORECASE,
)


def first_tool(message: str, tools: Collection[str]) -> str | None:
    """The tool a user's ``message`` must be answered with first, if code can tell."""
    plain = message.strip().replace("\u2019", "'")
    if "set_reminder" in tools and _REMINDER.search(plain):
        return "set_reminder"
    if "send_message" in tools and _SAY_IT_NOW.search(plain):
        return "send_message"
    return None


# A question, spoken (Whisper may leave the mark off) or typed.
_QUESTION_OPENING = re.compile(
    r"^(?:what|what's|whats|where|where's|when|who|who's|whom|whose|which|why|how|do|does|did|"
    r"is|are|was|were|have|has|had|can|could|will|would|should)\b",
    re.IGNORECASE,
)


# Who a question is about: the user ("my", "I", "we"; "me" is left out, as in "tell me a joke")
# or someone named (a capital inside the sentence).
_FIRST_PERSON = re.compile(r"\b(?:i|my|mine|we|us|our|ours)\b", re.IGNORECASE)
_NAME = re.compile(r"(?<=[\w,] )[A-Z][a-z]+")


def is_question(message: str) -> bool:
    """Whether the user asks something."""
    said = message.strip().replace("\u2019", "'")
    return said.endswith("?") or bool(_QUESTION_OPENING.match(said))


def asks_about_their_life(message: str) -> bool:
    """A question about the user or someone they know ("When is Ana's birthday?"), whose
    answer must come from what they said (a grounded reply, assistant/agent/tools.py); not
    one of general knowledge or small talk ("How many minutes are in three hours?")."""
    said = message.strip().replace("\u2019", "'")
    return is_question(said) and bool(_FIRST_PERSON.search(said) or _NAME.search(said))
