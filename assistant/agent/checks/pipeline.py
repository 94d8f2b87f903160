"""The checks a step's reply passes through, in one declared order.

Each piece of the reply goes through every check in ``ORDER``, each seeing what the ones
before it let through: the grounding check first (an invented fact is cut before anything else
looks at it; it asks again for a template's "[blank]"), then an answer to what the user told
that says none of it, then the bracketed asides left out,
the opening guard, the question said back as its answer, a run of words copied from a note of
the prompt or an earlier reply, the diet, the loop stop, and last the two turns of person (the
only ones that change words, so the others compare what the model wrote): an answer about the
user opening in their voice, then the user's own words said back; after all of them, an
admission alone said with the question it answers. At the end of the reply
each check in turn gives up what it held, and that too goes through those after it.

Precedence: the first check in ``ORDER`` whose verdict is ``REASK`` decides the re-ask; a
``STOP`` ends the reading but not the flushing (what the other checks held before the stop
was sound); any verdict but ``PASS`` means the window keeps what the user was shown.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

from assistant.agent.checks.admission import NamedAdmission
from assistant.agent.checks.asides import AsideDrop
from assistant.agent.checks.check import Check, Seen, Verdict
from assistant.agent.checks.diet import DietCheck
from assistant.agent.checks.echo import EchoTurn
from assistant.agent.checks.evasion import EvasiveAnswer
from assistant.agent.checks.grounding import GroundCheck
from assistant.agent.checks.loops import LoopStop
from assistant.agent.checks.opening import OpeningGuard
from assistant.agent.checks.perspective import Perspective
from assistant.agent.checks.restated import RestatedQuestion
from assistant.agent.checks.runs import CopiedRun
from assistant.agent.reply_form import ReplyForm

log = logging.getLogger(__name__)

ORDER: tuple[type[Check], ...] = (
    GroundCheck,
    EvasiveAnswer,
    AsideDrop,
    OpeningGuard,
    RestatedQuestion,
    CopiedRun,
    DietCheck,
    LoopStop,
    Perspective,
    EchoTurn,
    NamedAdmission,
)
NAMES: tuple[str, ...] = tuple(kind.name for kind in ORDER)


class ReplyChecks:
    """The checks of one try of a step, fed its reply as it streams."""

    def __init__(self, checks: Sequence[Check]) -> None:
        self.checks = tuple(checks)

    @classmethod
    def for_step(cls, form: ReplyForm, seen: Seen, enabled: Iterable[str] = NAMES) -> ReplyChecks:
        """The ``enabled`` checks, in ``ORDER``, for one try of a step held to ``form``."""
        wanted = set(enabled)
        return cls([kind.for_step(form, seen) for kind in ORDER if kind.name in wanted])

    def feed(self, piece: str) -> str:
        """What of ``piece`` may be shown now."""
        return self._through(self.checks, piece)

    def flush(self) -> str:
        """What the checks still hold, at the end of the reply, as far as the first that asks
        for the reply again (what it let through before was sound, as while streaming)."""
        shown = ""
        for index, check in enumerate(self.checks):
            if self.reask is not None:
                break
            shown += self._through(self.checks[index + 1 :], check.flush())
        return shown

    @property
    def halted(self) -> bool:
        """Whether the reply is read no further (a check stopped it or asks for it again)."""
        return any(check.verdict in (Verdict.STOP, Verdict.REASK) for check in self.checks)

    @property
    def reask(self) -> Check | None:
        """The check whose re-ask the step takes (the first in ``ORDER`` asking for one)."""
        return next((c for c in self.checks if c.verdict is Verdict.REASK), None)

    @property
    def altered(self) -> bool:
        """Whether any check acted: what the user saw is then what the window keeps."""
        return any(check.verdict is not Verdict.PASS for check in self.checks)

    def log(self) -> None:
        for check in self.checks:
            if check.verdict is not Verdict.PASS:
                log.warning("%s check, %s: %s", check.name, check.verdict.value, check.reason())

    @staticmethod
    def _through(checks: Iterable[Check], piece: str) -> str:
        for check in checks:
            piece = check.feed(piece)
        return piece
