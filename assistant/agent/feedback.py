"""What the user's next message says of the memories a reply used: they gain utility when it
does not correct the reply, and lose it when it does (docs/AGENT.md, "Memories that helped").

"Used" is decided by words, not by the model (it is not asked which memories it drew on, and
would not know): a memory shown for the turn was used when the reply shares a content word
with it that the user's own message did not bring. Every shown memory shares the question's
words (that is why it was retrieved), so those prove nothing; a word only the memory could
have given ("Ljubljana" for "Where does my godmother live?") does. An "I don't know" uses nothing.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from assistant.agent.corrections import corrects
from assistant.agent.events import Event, UserText, UserUtterance
from assistant.agent.turn import FALLBACK_MESSAGE, Turn
from memory.records import MemoryRecord
from memory.stream import MemoryRequestError, MemoryStream

log = logging.getLogger(__name__)

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
# How the agent stores a line of conversation ("User: ...", "Brain OS: ...").
_SPEAKER = re.compile(r"^(?:user|brain os):\s*", re.IGNORECASE)
# Words that carry no content of their own: function words, the commonest verbs, fillers.
_STOP = frozenset(
    re.findall(
        r"[\w']+",
        """a an the and or but if then so of to in on at by for with from about as into onto over
    under after before than that this these those there here what which who whom whose when
    where why how not no yes all any some each every just also very too more most only own
    same such again once up down out off both few other is are was were be been being am do
    does did done doing have has had having will would shall should can could may might must
    get got go going went gone make made say said tell told know think like want need let
    i me my mine we us our ours you your yours he him his she her hers it its they them
    their theirs one ok okay oh well really yeah sure please thanks thank hi hello sorry
    now today still even much many lot bit thing things something anything nothing don't
    i'm it's that's you're i've i'll you'll can't won't didn't isn't""",
    )
)


def content_words(text: str) -> set[str]:
    """The words of ``text`` that say something: lower-cased, without a possessive or plural
    "s", function words and one-letter words left out (numbers kept: "at 4")."""
    words: set[str] = set()
    for word in _WORD.findall(_SPEAKER.sub("", text).lower()):
        if word in _STOP:
            continue
        word = word.removesuffix("'s")
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        if len(word) > 1 or word.isdigit():
            words.add(word)
    return words


def used_in(said: str, asked: str, memories: Iterable[MemoryRecord]) -> list[str]:
    """The ids of the ``memories`` that ``said`` drew on: each shares a content word with it
    that ``asked`` (what it answered) does not hold."""
    brought = content_words(said) - content_words(asked)
    return [m.id for m in memories if brought & content_words(m.text)]


@dataclass(frozen=True)
class _Awaiting:
    """A reply to the user, and the memories it used, until the user's next message."""

    reply: str
    used: list[str]


class ReplyFeedback:
    """Holds the last reply's memories until the user's next message judges them; the verdict
    is written once that turn's reply is out, so no turn waits for it."""

    def __init__(self, stream: MemoryStream) -> None:
        self._stream = stream
        self._awaiting: _Awaiting | None = None
        # Judged at the start of a turn, written at its end: (memory ids, helped).
        self._verdict: tuple[list[str], bool] | None = None
        # This turn's user message and the memories shown for it (None: not the user's turn).
        self._asked: str | None = None
        self._shown: Sequence[MemoryRecord] = ()

    def begin(self, event: Event, shown: Sequence[MemoryRecord]) -> None:
        """A turn begins with ``shown``: a message from the user judges the last reply's
        memories. Other events (a heartbeat, a task's end) judge nothing and leave them
        waiting: the user has not spoken yet."""
        if not isinstance(event, UserText | UserUtterance):
            self._asked, self._shown = None, ()
            return
        if self._awaiting is not None:
            awaiting, self._awaiting = self._awaiting, None
            self._verdict = (awaiting.used, not corrects(event.text, awaiting.reply))
        self._asked, self._shown = event.text, shown

    def end(self, turn: Turn | None) -> None:
        """The turn is over (``turn`` None: it failed): the verdict on the last reply is
        written, and the memories this turn's reply used wait for the user's next message
        if the user had it whole (not cut off, not the fallback)."""
        verdict, self._verdict = self._verdict, None
        if verdict is not None:
            try:
                self._stream.adjust_utility(*verdict)
            except (ValueError, MemoryRequestError, OSError) as error:
                log.warning("could not change the memories' utility: %s", error)
        asked, self._asked = self._asked, None
        shown, self._shown = self._shown, ()
        if turn is None or asked is None or turn.interrupted or turn.error:
            return
        if not turn.reply or turn.reply == FALLBACK_MESSAGE:
            return
        used = used_in(turn.reply, asked, shown)
        if used:
            self._awaiting = _Awaiting(turn.reply, used)
