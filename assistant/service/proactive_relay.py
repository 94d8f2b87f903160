"""The heartbeat's look at the user's world, between the session and the clients: each tick
the watch is asked what changed; something new wakes the agent with a digest (a turn of its
own, shown to no one while it runs), and a message it writes is shown, marked proactive, and
spoken only if the gate allows it then. The user's words stop such a turn, and "not now"
after a proactive message silences them for a while."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable

from assistant.agent.events import HeartbeatTick, NotSaid
from assistant.agent.turn import Turn
from assistant.proactive.digest import Digest
from assistant.proactive.gate import GateRules, ProactiveGate, asks_for_quiet
from assistant.protocol.common import Wire
from assistant.protocol.conversation import ReplyChunk, ReplyEnd, ReplyStart
from assistant.service.jobs import FromThread
from assistant.service.session import Opening, Session
from assistant.service.turns import Turns
from assistant.service.voice_relay import VoiceRelay
from assistant.settings import Settings

log = logging.getLogger(__name__)

# Voice states in which the user speaks or is spoken to.
_VOICE_BUSY = ("hearing", "thinking", "speaking")
# "Not now" counts as an answer to a proactive message said this recently (seconds).
ANSWER_WITHIN_S = 15 * 60
# Two messages with this share of their words in common say the same thing.
SAME_WORDS = 0.8


class ProactiveRelay:
    def __init__(
        self,
        settings: Settings,
        opening: Opening,
        turns: Turns,
        voice: VoiceRelay,
        broadcast: Callable[[Wire], None],
        from_thread: FromThread,
        attached: Callable[[], int],
    ) -> None:
        """``attached``: how many clients are attached (a window open counts as the user
        being there)."""
        self.settings = settings
        self.opening = opening
        self.turns = turns
        self.voice = voice
        self.broadcast = broadcast
        self.attached = attached
        self.gate: ProactiveGate | None = None
        self._wake = from_thread(self._wake_agent)
        self._said_at: float | None = None

    def start(self, session: Session) -> None:
        self.gate = ProactiveGate(
            GateRules.of(self.settings.heartbeat),
            self._present,
            self._busy,
            self.settings.data_dir / "proactive.json",
            session.clock,
        )

    def look(self) -> None:
        """From the heartbeat's thread: what changed since the agent last looked; something
        new wakes it (nothing new asks no LLM anything)."""
        session = self.opening.session
        if not self.settings.heartbeat.proactive or session is None or self.gate is None:
            return
        if self.turns.busy:
            return
        digest = session.watch.look()
        if digest.empty:
            return
        log.info("heartbeat: %d new (%d actionable)", len(digest.items), len(digest.actionable))
        self._wake(digest)

    def said_first(self) -> set[str]:
        """The messages said first (for the history a window is shown)."""
        return {said.text for said in self.gate.ledger.said} if self.gate is not None else set()

    def heard(self, text: str) -> None:
        """The user's words (typed or spoken): a heartbeat's turn stops, and "not now" just
        after a proactive message silences them for a while."""
        self.turns.user_active()
        gate = self.gate
        if gate is None or self._said_at is None:
            return
        if time.monotonic() - self._said_at < ANSWER_WITHIN_S and asks_for_quiet(text):
            gate.not_now()
            self._said_at = None

    def _wake_agent(self, digest: object) -> None:
        if not isinstance(digest, Digest) or self.gate is None:
            return
        blocked = self.gate.blocked()
        if blocked is not None:
            log.info("heartbeat: no message now (%s)", blocked)
        event = HeartbeatTick(
            tuple(digest.lines()),
            may_speak=blocked is None and bool(digest.actionable),
            at=digest.at,
        )
        self.turns.heartbeat(event, lambda turn, done: self._done(digest, turn, done))

    def _done(self, digest: Digest, number: int, turn: Turn) -> None:
        """The heartbeat's turn ended: what it was given is not given again (unless the user
        cut in), and its message, if any, is said when it still may be."""
        session = self.opening.session
        if session is None or self.gate is None:
            return
        if turn.interrupted:
            if turn.reply:
                self.turns.note(NotSaid("the user spoke first"))
            return
        session.watch.given(digest)
        if not turn.reply:
            return
        reason = self.gate.blocked() or self._repeats(turn.reply)
        if reason is not None:
            log.info("heartbeat: not said (%s): %s", reason, turn.reply)
            self.turns.note(NotSaid(reason))
            return
        self._say(session, number, turn.reply)
        self.gate.said([item.key for item in digest.actionable], turn.reply)
        self._said_at = time.monotonic()

    def _say(self, session: Session, number: int, text: str) -> None:
        log.info("heartbeat: said first: %s", text)
        self.broadcast(ReplyStart(turn=number, proactive=True))
        self.broadcast(ReplyChunk(turn=number, text=text))
        self.broadcast(ReplyEnd(turn=number, text=text))
        speech = self.voice.speak(number, None, unsaid=True)
        if speech is not None:
            speech.feed(text)
            speech.finish()

    def _repeats(self, text: str) -> str | None:
        """A message that says what an earlier proactive one said."""
        gate = self.gate
        assert gate is not None
        words = _words(text)
        for said in gate.ledger.said[-20:]:
            earlier = _words(said.text)
            common = len(words & earlier) / max(1, min(len(words), len(earlier)))
            if common >= SAME_WORDS:
                return f'said before at {said.at:%H:%M}: "{said.text}"'
        return None

    def _present(self) -> bool:
        if self.attached():
            return True
        heard = self.voice.last_heard
        window = self.settings.heartbeat.presence_minutes * 60
        return heard is not None and time.monotonic() - heard < window

    def _busy(self) -> bool:
        running = self.turns.running
        return (
            bool(self.turns.waiting)
            or (running is not None and not running.heartbeat)
            or self.voice.status.state in _VOICE_BUSY
        )


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9']+", text.lower()))
