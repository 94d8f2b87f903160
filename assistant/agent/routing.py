"""Requests whose first step code can choose, so that a small model cannot talk instead of
acting: asked to be reminded or to work on something in the background, the packaged models
said they would and called nothing. The step is then held to that tool's schema (or offered
only that tool); the model still writes its arguments, and the tool's own words answer the
user, so a reply says a reminder was set or a task started only when one was. A stronger
endpoint would call the same tool."""

from __future__ import annotations

import re
from collections.abc import Collection

from assistant.agent.checks.text import NAME_WORD, straight
from assistant.agent.told import asks_for_told

# "Remind me to ...", "Don't let me forget ...", "Set a reminder ...": a reminder; "remind me
# what she said" or "remind me who that was" asks the memory instead.
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


# "Tell me a story", "write me a limerick about a kettle", "can you tell me a riddle": said at
# once. The 1.5B model handed a request for a short story to a background task, which took over
# two minutes and reported a one-line summary instead of the story.
_SAY_IT_NOW = re.compile(
    r"^(?:(?:can|could|would|will) you |please )?(?:tell|write|give|make up|sing|recite) "
    r"(?:me |us )?(?:a |an |another |one more |some )?(?:\w+ ){0,3}?"
    r"(?:story|stories|joke|jokes|poem|haiku|limerick|riddle|rhyme|song|fact|fun fact|quote)\b",
    re.IGNORECASE,
)


# Work asked for later or out of the way: "in the background, ...", "when you have time,
# ...", "no rush, ...", "look into ... and tell me". Words about a background ("music in the
# background") are not a request: the phrase leads the message or ends it, or follows a verb.
_POLITE = r"^(?:(?:please|could you|can you|would you|will you),?\s+)?"
_WHEN_FREE = (
    r"(?:in the background|when(?:ever)? you (?:have|get|find) (?:the |a |some )?"
    r"(?:time|moment|minute|chance|sec|second)|(?:when|once|if) you(?:'re| are) (?:free|not busy))"
)
_DELEGATE = re.compile(
    rf"{_POLITE}{_WHEN_FREE}\b"
    r"|\b(?:when(?:ever)? you (?:have|get|find) (?:the |a |some )?(?:time|moment|minute|chance)|"
    r"no rush|there's no rush|take your time|at your leisure)[.!]?$"
    rf"|{_POLITE}(?:summari[sz]e|write|draft|make|put together|gather|collect|compile|find|"
    r"look|go|read|research|check|work out|plan|sort)\b.*\bin the background[.!]?$"
    r"|\b(?:do|run|start|put|keep|work on) (?:it|this|that|a task|something) "
    r"(?:going )?in the background\b"
    rf"|{_POLITE}(?:look|dig|research|find out|go through|search through|read through)"
    r"\b.{3,}?\b(?:and|then) (?:tell|let) me\b"
    r"|\b(?:look|dig) into\b.{3,}?\b(?:and|then) (?:tell|let) me\b",
    re.IGNORECASE,
)


def first_tool(message: str, tools: Collection[str]) -> str | None:
    """The tool a user's ``message`` must be answered with first, if code can tell."""
    plain = straight(message.strip())
    if "set_reminder" in tools and _REMINDER.search(plain):
        return "set_reminder"
    if "delegate_task" in tools and _DELEGATE.search(plain):
        return "delegate_task"
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
# "me" alone asks for something ("Can you tell me a joke?"); "about me" asks about the user.
_FIRST_PERSON = re.compile(r"\b(?:i|my|mine|we|us|our|ours|about me)\b", re.IGNORECASE)
_NAME = re.compile(rf"(?<=[\w,] ){NAME_WORD}")


def is_question(message: str) -> bool:
    """Whether the user asks something: a question, or a request to be told what may have
    been told ("Remind me what she said.")."""
    said = straight(message.strip())
    return said.endswith("?") or bool(_QUESTION_OPENING.match(said)) or asks_for_told(said)


def asks_about_their_life(message: str) -> bool:
    """A question about the user or someone they know ("When does Ysolde's lease run out?"),
    whose answer must come from what they said (a grounded reply, assistant/agent/tools.py);
    not one of general knowledge or small talk ("How many grams are in a pound?")."""
    said = straight(message.strip())
    return is_question(said) and bool(_FIRST_PERSON.search(said) or _NAME.search(said))
