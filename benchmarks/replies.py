"""Whether a reply answers at all. The fast profile's 0.5B model can write the user's own words
back as its reply (every reply of a 22-message conversation, measured 2026-11-26), and a
benchmark that times such replies must say how many there were: a copied sentence is written
as fast as an answer, and it is no answer."""

from __future__ import annotations

from collections.abc import Sequence

from voice.wer import normalize, word_error_rate

# A reply whose opening words are the user's words with fewer edits than this share repeats
# them; an acknowledgement that rephrases ("I will remind you to ...") has more.
MAX_EDITS = 0.3


def repeats(said: str, reply: str) -> bool:
    """Whether ``reply`` opens with the user's words ``said`` (give or take a word)."""
    words, written = normalize(said), normalize(reply)
    if not words:
        return False
    lengths = range(max(1, len(words) - 2), len(words) + 3)
    edits = min(word_error_rate(" ".join(words), " ".join(written[:n])) for n in lengths)
    return edits <= MAX_EDITS


def repeated_share(pairs: Sequence[tuple[str, str]]) -> str:
    """How many of the (said, reply) pairs repeat the user, as "k/n"."""
    return f"{sum(repeats(said, reply) for said, reply in pairs)}/{len(pairs)}"


def copied_share(replies: Sequence[str]) -> str:
    """How many replies open as an earlier one of the run did (its first sentences, four words
    at least: the agent's own test, assistant/agent/checks/recent.py), as "k/n"."""
    from assistant.agent.checks.recent import MIN_WORDS, opening

    seen: set[str] = set()
    copied = 0
    for reply in replies:
        start = " ".join(opening(reply).lower().split())
        if len(start.split()) >= MIN_WORDS:
            copied += start in seen
            seen.add(start)
    return f"{copied}/{len(replies)}"
