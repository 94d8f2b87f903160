"""A reply that opens by refusing (or by disowning itself: "I'm just a computer") is held back
and asked for once more.

The packaged models are code models, and they refuse what is not code: "I'm sorry, but I
can't assist with that." to a request for a story, to bad news, to a request for a reminder
(the 0.5B model far more often than the 1.5B: docs/BENCHMARKS.md, "Judgement"). Instructions
did not stop it. So the opening of each message is held while it could still become a refusal;
one that does is never shown or spoken, the stream is closed, and the step is asked again, for
a message held to open willingly ("Sure", "Oh", "Once", ...: WILLING_OPENINGS). Only once,
and on an endpoint with native tool calling (no grammar) simply asked again: what the second
reply says stands. A reply that merely starts like one ("I'm sorry to hear that") is released
as soon as it parts from every refusal, a word or two.
"""

from __future__ import annotations

# How a refusal opens, after an apology or none.
_APOLOGIES = (
    "",
    "i'm sorry, but ",
    "i'm sorry, ",
    "i'm so sorry, but ",
    "i'm so sorry, ",
    "i am sorry, but ",
    "sorry, but ",
    "sorry, ",
    "i apologize, but ",
    "unfortunately, ",
)
_REFUSALS = (
    "i can't assist",
    "i can't help with",
    "i can't help you with",
    "i cannot assist",
    "i cannot help with",
    "i can't provide",
    "i can't fulfill",
    "i can't do that",
    "i'm unable to",
    "i am unable to",
    "i'm not able to",
    "as an ai",
    "i'm just a computer",
    "i'm just an ai",
    "i am just a computer",
)
OPENINGS = tuple(apology + refusal for apology in _APOLOGIES for refusal in _REFUSALS)

# The one reply asked for after a refusal opens with one of these (a grammar holds it: asked
# with a note instead, the 0.5B model said the note back). None of them opens a refusal, and
# none is an apology: allowed "I'm sorry to hear", the 1.5B model answered a friendly
# greeting with "I'm sorry to hear about that." (sympathy still opens with "Oh").
WILLING_OPENINGS = (
    "Sure",
    "Of course",
    "Here",
    "Oh",
    "OK",
    "Okay",
    "Got it",
    "Noted",
    "Congratulations",
    "Good",
    "Great",
    "That",
    "Yes",
    "No",
    "Once",
    "Well",
    "Hello",
    "Hi",
    "Thanks",
    "You",
    "Your",
)
WILLING_PATTERN = "^(" + "|".join(WILLING_OPENINGS) + ')[^"]*$'


def _normal(text: str) -> str:
    return " ".join(text.replace("\u2019", "'").lower().split())


class RefusalGuard:
    """Feed it the text of one reply as it streams; it returns what may be shown now."""

    def __init__(self, armed: bool = True, unwanted: tuple[str, ...] = ()) -> None:
        """``unwanted``: openings held back like a refusal's for this reply (lower-case;
        sympathy.py's, where nothing went wrong)."""
        self.refused = False
        self._held = ""
        self._open = not armed
        self._openings = OPENINGS + unwanted

    def feed(self, piece: str) -> str:
        if self._open or not piece:
            return piece
        self._held += piece
        opening = _normal(self._held)
        if any(opening.startswith(refusal) for refusal in self._openings):
            self.refused = True
            return ""
        if any(refusal.startswith(opening) for refusal in self._openings):
            return ""
        return self.flush()

    def flush(self) -> str:
        """What is held, at the end of the reply (a short one that only looked like a
        refusal so far); nothing once it refused."""
        self._open = True
        held, self._held = self._held, ""
        return "" if self.refused else held
