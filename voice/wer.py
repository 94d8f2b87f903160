"""Word error rate, with the text normalisation speech tests need (case, punctuation, numbers)."""

from __future__ import annotations

import re

_NUMBER_WORDS = {
    "0": "zero",
    "1": "one",
    "2": "two",
    "3": "three",
    "4": "four",
    "5": "five",
    "6": "six",
    "7": "seven",
    "8": "eight",
    "9": "nine",
    "10": "ten",
    "11": "eleven",
    "12": "twelve",
    "20": "twenty",
    "100": "hundred",
}
_SPELLING = {"mr": "mister", "mrs": "missus", "dr": "doctor", "ok": "okay"}


def normalize(text: str) -> list[str]:
    """Lower-case words without punctuation; digits and common abbreviations spelled out."""
    words = re.sub(r"[^a-z0-9' ]+", " ", text.lower().replace("-", " ")).split()
    words = [w.strip("'") for w in words if w.strip("'")]
    return [_NUMBER_WORDS.get(w, _SPELLING.get(w, w)) for w in words]


def word_error_rate(reference: str, hypothesis: str) -> float:
    """(substitutions + deletions + insertions) / reference words, after :func:`normalize`."""
    ref, hyp = normalize(reference), normalize(hypothesis)
    if not ref:
        return 0.0 if not hyp else 1.0
    previous = list(range(len(hyp) + 1))
    for i, ref_word in enumerate(ref, start=1):
        current = [i] + [0] * len(hyp)
        for j, hyp_word in enumerate(hyp, start=1):
            current[j] = min(
                previous[j] + 1,
                current[j - 1] + 1,
                previous[j - 1] + (ref_word != hyp_word),
            )
        previous = current
    return previous[-1] / len(ref)
