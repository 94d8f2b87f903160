"""The two questions the knowledge graph puts to the LLM, each held to a JSON schema:

- **extraction**: which (subject, relation, object) facts do these memories state? Several
  memories go in one request, numbered, and each fact names the memory it came from;
- **replacement**: which known facts does a new fact make outdated?

The rules follow AriGraph's extraction and replacing prompts, in our own words; they share one
system prompt (GRAPH_RULES) with the knowledge graph's third question, whether two names name
the same thing. A reply that is
not what was asked (an exception from the client, a wrong shape, numbers out of range) is
``None``: the caller changes nothing and may ask again later.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memory.llm import Message, StructuredLLM
from memory.people import is_kin, named_relative

log = logging.getLogger(__name__)

NAME_CHARS = 60
RELATION_CHARS = 40
RELATION_WORDS = 5
FACTS_PER_MEMORY = 8
# Relations about the conversation itself, not the world.
TALK_RELATIONS = ("says", "said", "asks", "asked", "is talking to", "tells", "told")
REPLY_TOKENS = 900

# The three kinds of request open their user message with one of these.
EXTRACT = "Task: extract."
OUTDATED = "Task: outdated."
SAME = "Task: same."

# One system prompt for the three tasks, so that every request the graph sends starts with the
# same tokens: a llama.cpp server keeps the last prompt's state and reads only what differs,
# and requests alternate between extraction and replacement (measured in docs/BENCHMARKS.md).
GRAPH_RULES = (
    "You keep a personal assistant's knowledge graph. Each request starts with its task.\n\n"
    f"{EXTRACT} Read the numbered memories and list the facts they state, each as a "
    "triplet: subject, relation, object.\n"
    "- Subject and object are single things: a person, place, object, organisation, date, "
    "activity. Use a person's name when the memory gives it. The person speaking in a "
    'memory that starts with "User:" is "user"; "Assistant:" is "assistant".\n'
    '- The relation is a few words ("lives in", "works as", "is sister of", "likes").\n'
    "- One fact per triplet; split a sentence that states several.\n"
    "- A fact about someone the user mentions is that person's, not the user's: "
    '"User: My cousin Bogdana lives in Quimper and works as a surveyor." gives (user, has '
    "cousin, Bogdana), (Bogdana, lives in, Quimper), (Bogdana, works as, surveyor).\n"
    "- Leave out small talk and facts about the conversation itself (who is talking, what "
    "was just said or asked).\n"
    "- certain is true for a fact the memory states, false for one it only guesses at, "
    "plans or hopes.\n"
    "- With several memories, give each triplet the number of the memory it comes from. A "
    "memory with no lasting fact gives none.\n\n"
    f"{OUTDATED} Below are facts already known (numbered) and new facts (lettered), just "
    "learnt. List the known facts a new fact makes outdated: both must describe the same "
    'aspect of the same thing, and the new one must say it changed (for "Severin lives in '
    'Oulu" and then "Severin lives in Zagreb": where Severin lives; not for "Severin likes '
    'opera" and then "Severin likes reggae", which can both hold). If unsure, leave the fact '
    "out: keeping both is better than losing one. Most new facts replace nothing; then the list is "
    "empty.\n\n"
    f"{SAME} Say whether two names name the same thing. If unsure, say false."
)


@dataclass(frozen=True)
class Extracted:
    memory: int  # index into the memories asked about
    subject: str
    relation: str
    object: str
    hypothesis: bool


def extraction_schema(memories: int) -> dict[str, Any]:
    """Each triplet names its memory, unless there is only one (every token the model writes
    costs a forward pass, forced or not)."""
    name = {"type": "string", "minLength": 1, "maxLength": NAME_CHARS}
    properties: dict[str, Any] = {
        "subject": name,
        "relation": {"type": "string", "minLength": 1, "maxLength": RELATION_CHARS},
        "object": name,
        "certain": {"type": "boolean"},
    }
    if memories > 1:
        properties = {
            "memory": {"type": "integer", "enum": list(range(1, memories + 1))},
            **properties,
        }
    triplet = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    triplets = {"type": "array", "items": triplet, "maxItems": FACTS_PER_MEMORY * memories}
    return {
        "type": "object",
        "properties": {"triplets": triplets},
        "required": ["triplets"],
        "additionalProperties": False,
    }


def extract(llm: StructuredLLM, memories: Sequence[str]) -> list[Extracted] | None:
    """The facts stated by ``memories`` (texts), or None when the reply was unusable."""
    numbered = "\n".join(f"{n}. {text}" for n, text in enumerate(memories, start=1))
    messages: list[Message] = [
        {"role": "system", "content": GRAPH_RULES},
        {"role": "user", "content": f"{EXTRACT}\nMemories:\n{numbered}"},
    ]
    reply = _ask(llm, messages, extraction_schema(len(memories)))
    items = reply.get("triplets") if reply is not None else None
    if not isinstance(items, list):
        return None
    found: list[Extracted] = []
    for item in items:
        triplet = _triplet(item, len(memories))
        if triplet is None:
            return None
        if _worth_keeping(triplet, memories[triplet.memory]) and triplet not in found:
            found.append(triplet)
    return found


def replacement_schema(known: int, new: int) -> dict[str, Any]:
    pair = {
        "type": "object",
        "properties": {
            "known": {"type": "integer", "enum": list(range(1, known + 1))},
            "new": {"enum": [_letter(i) for i in range(new)]},
        },
        "required": ["known", "new"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"outdated": {"type": "array", "items": pair, "maxItems": known}},
        "required": ["outdated"],
        "additionalProperties": False,
    }


def outdated(
    llm: StructuredLLM, known: Sequence[str], new: Sequence[str]
) -> list[tuple[int, int]] | None:
    """(known index, new index) for each known fact a new one replaces; None: unusable reply."""
    if not known or not new:
        return []
    listed = "\n".join(f"{n}. {text}" for n, text in enumerate(known, start=1))
    lettered = "\n".join(f"{_letter(i)}. {text}" for i, text in enumerate(new))
    messages: list[Message] = [
        {"role": "system", "content": GRAPH_RULES},
        {
            "role": "user",
            "content": f"{OUTDATED}\nKnown facts:\n{listed}\n\nNew facts:\n{lettered}",
        },
    ]
    reply = _ask(llm, messages, replacement_schema(len(known), len(new)))
    pairs = reply.get("outdated") if reply is not None else None
    if not isinstance(pairs, list):
        return None
    letters = [_letter(i) for i in range(len(new))]
    found: list[tuple[int, int]] = []
    for pair in pairs:
        number = pair.get("known") if isinstance(pair, dict) else None
        letter = pair.get("new") if isinstance(pair, dict) else None
        if not isinstance(number, int) or not 1 <= number <= len(known) or letter not in letters:
            return None
        if (number - 1, letters.index(letter)) not in found:
            found.append((number - 1, letters.index(letter)))
    return found


def _ask(llm: StructuredLLM, messages: list[Message], schema: dict[str, Any]) -> Any:
    try:
        return llm.complete_json(messages, schema, max_tokens=REPLY_TOKENS)
    except Exception as error:  # any failure of the client is "no answer" (memory.llm)
        log.warning("knowledge graph: no usable answer: %s", error)
        return None


def _triplet(item: Any, memories: int) -> Extracted | None:
    if not isinstance(item, dict):
        return None
    number = item.get("memory", 1 if memories == 1 else None)
    parts = [item.get(key) for key in ("subject", "relation", "object")]
    if not isinstance(number, int) or not 1 <= number <= memories:
        return None
    if not all(isinstance(part, str) for part in parts):
        return None
    subject, relation, obj = (" ".join(str(part).split()) for part in parts)
    return Extracted(number - 1, subject, relation.lower(), obj, item.get("certain") is False)


def _worth_keeping(triplet: Extracted, memory: str) -> bool:
    """Not empty, not a loop, a relation of a few words, not about the talk itself, and an
    object the memory names."""
    if not (triplet.subject and triplet.relation and triplet.object):
        return False
    if not _named_in(triplet.object, memory):
        return False
    if triplet.subject.casefold() == triplet.object.casefold():
        return False
    if len(triplet.relation.split()) > RELATION_WORDS:
        return False
    talk = {"user", "assistant", "you", "i"}
    between_speakers = {triplet.subject.casefold(), triplet.object.casefold()} <= talk
    if between_speakers or triplet.relation in TALK_RELATIONS:
        return False
    return _stated_together(triplet, memory)


_SENTENCE = re.compile(r"[^.!?]+[.!?]*")
_PRONOUNS = re.compile(r"\b(?:he|she|they|him|her|them|his|their)\b", re.IGNORECASE)


def _stated_together(triplet: Extracted, memory: str) -> bool:
    """Whether a sentence of ``memory`` that names the object states it of the subject, when
    the subject is someone: for the one speaking, a sentence not about someone they name ("My
    cousin Wilhelmina lives in Tampere" is Wilhelmina's); for anyone else, one that names them
    (or, after one that did, says "he" or "she"). Given a memory in which the speaker gave
    their own name and then a relative's home and job, the 1.5B model credited the home and the
    job to the speaker.
    """
    subject = triplet.subject.casefold()
    is_speaker = subject in _speakers(memory)
    if not (is_speaker or triplet.subject[:1].isupper()):
        return True  # a thing ("weather", "rain"), not someone the facts could be mixed up with
    named_before = False
    for match in _SENTENCE.finditer(memory):
        sentence = match.group(0)
        names_subject = not is_speaker and _named_in(triplet.subject, sentence)
        if _named_in(triplet.object, sentence):
            relative = named_relative(sentence)
            if is_speaker and relative is None:
                return True  # the speaker's own fact
            if is_speaker and relative is not None and relative in triplet.object:
                return is_kin(triplet.relation)  # who the relative is: (user, has neighbour, Bram)
            if names_subject or (named_before and _PRONOUNS.search(sentence)):
                return True
        named_before = named_before or names_subject
    return False


_INTRODUCED = re.compile(r"\b(?:i'm|i am|my name is|call me) ([A-Z][a-z]+)", re.IGNORECASE)


def _speakers(memory: str) -> set[str]:
    """Who says ``memory`` (case-folded): "user", "I" and the like, the name before its
    colon ("Ottilie: ..."), and the name they give themselves ("Hi, I'm Odette")."""
    names = set(SPEAKER_WORDS)
    prefix, colon, _ = memory.partition(":")
    if colon and 0 < len(prefix.split()) <= 3:
        names.add(prefix.strip().casefold())
    names.update(match.group(1).casefold() for match in _INTRODUCED.finditer(memory))
    return names


# Who speaks in a memory is named by its prefix or by a pronoun, not always in so many words.
SPEAKER_WORDS = frozenset({"user", "assistant", "you", "i", "me", "myself"})
# Name words too common to show that a memory names the thing ("the", "of").
GROUNDING_LETTERS = 3


def _named_in(name: str, memory: str) -> bool:
    """Whether ``memory`` names ``name``: a speaker, or one of the name's words (of three
    letters or more; a shorter name as a whole) in the memory's text. Small models fill a
    slot they cannot fill from the memory with a name from the instructions' example or a
    placeholder ("unknown", "none"); such a fact is not kept."""
    folded = name.casefold()
    if folded in SPEAKER_WORDS:
        return True
    text = memory.casefold()
    words = [w for w in re.findall(r"\w+", folded) if len(w) >= GROUNDING_LETTERS]
    if not words:
        return folded in text
    return any(word in text for word in words)


def _letter(index: int) -> str:
    return chr(ord("a") + index) if index < 26 else f"z{index}"
