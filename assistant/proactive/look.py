"""The agent's look at a heartbeat, apart from how the service runs it: ``wake`` turns what
changed into the event that wakes the agent (None when nothing did, so no LLM is asked), and
``settle`` decides, once the agent's turn is over, whether its message is said (the gate, and
not twice the same words) and marks what it was given. The service's ProactiveRelay and
benchmarks/proactive.py both go through here."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import timedelta

from assistant.agent.events import HeartbeatTick
from assistant.agent.turn import Turn
from assistant.proactive.digest import Digest
from assistant.proactive.gate import ProactiveGate, asks_for_quiet
from assistant.proactive.watch import Watch

log = logging.getLogger(__name__)

# "Not now" counts as the answer to a proactive message said this recently.
ANSWER_WITHIN = timedelta(minutes=15)
# Two messages with this share of their words in common say the same thing.
SAME_WORDS = 0.8
# Earlier proactive messages a new one is compared with.
COMPARED = 20


@dataclass(frozen=True)
class Woken:
    digest: Digest
    event: HeartbeatTick


@dataclass(frozen=True)
class Settled:
    """What came of a heartbeat's turn: the message to say, if any; else why a message
    written was not said (for the agent's history)."""

    said: str | None = None
    not_said: str | None = None


class Look:
    def __init__(self, watch: Watch, gate: ProactiveGate) -> None:
        self.watch = watch
        self.gate = gate

    def wake(self) -> Woken | None:
        """The event that wakes the agent, or None when nothing changed. While the user may
        not be spoken to, what may need them waits (it is not given, so it comes back when
        they may be: a night of quiet hours asks the LLM nothing for it)."""
        digest = self.watch.look()
        blocked = self.gate.blocked()
        if blocked is not None and digest.actionable:
            log.info("heartbeat: %d to tell later (%s)", len(digest.actionable), blocked)
            digest = digest.without(digest.actionable)
        if digest.empty:
            return None
        may_speak = bool(digest.actionable)
        log.info("heartbeat: %d new (%d to tell)", len(digest.items), len(digest.actionable))
        event = HeartbeatTick(
            tuple(digest.lines()),
            may_speak,
            digest.at,
            digest.tell() if may_speak else "",
            digest.opening() if may_speak else None,
        )
        return Woken(digest, event)

    def settle(self, woken: Woken, turn: Turn) -> Settled:
        """What comes of the agent's turn: the message told of the first item that may need
        the user is said if it still may be; what was given is marked so, except what may need
        the user and was not told (it comes back at a later heartbeat)."""
        digest = woken.digest
        if turn.interrupted:
            # What it was given comes back at the next heartbeat.
            return Settled(not_said="the user spoke first" if turn.reply else None)
        if not turn.reply:  # nothing to tell, or no message could be had: not asked again
            self.watch.given(digest)
            return Settled()
        told, later = digest.actionable[:1], digest.actionable[1:]
        blocked = self.gate.blocked()
        reason = blocked or self._repeats(turn.reply)
        # Blocked now (the user started speaking), what it was about is told later; a
        # repeat is not.
        self.watch.given(digest.without((*later, *(told if blocked else ()))))
        if reason is not None:
            log.info("heartbeat: not said (%s): %s", reason, turn.reply)
            return Settled(not_said=reason)
        self.gate.said([item.key for item in told], turn.reply)
        log.info("heartbeat: said first: %s", turn.reply)
        return Settled(said=turn.reply)

    def heard(self, text: str) -> None:
        """The user's words: "not now" just after a proactive message silences them for a
        while."""
        last = self.gate.last_said()
        if last is None or self.gate.clock() - last.at > ANSWER_WITHIN:
            return
        if asks_for_quiet(text) and not self.gate.quiet_now():
            self.gate.not_now()

    def said_first(self) -> set[str]:
        return {said.text for said in self.gate.ledger.said}

    def _repeats(self, text: str) -> str | None:
        """Why ``text`` says what an earlier proactive message said, if it does."""
        words = _words(text)
        for said in self.gate.ledger.said[-COMPARED:]:
            earlier = _words(said.text)
            common = len(words & earlier) / max(1, min(len(words), len(earlier)))
            if common >= SAME_WORDS:
                return f'said before at {said.at:%H:%M}: "{said.text}"'
        return None


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9']+", text.lower()))
