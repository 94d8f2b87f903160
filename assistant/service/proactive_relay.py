"""The heartbeat's look at the user's world, between the session and the clients: each tick
asks what changed (``Look``); something new wakes the agent with a digest, in a turn of its
own that no one sees while it runs, and a message it writes is shown, marked proactive, and
spoken only if it still may be said then. The user's words stop such a turn, and "not now"
after a proactive message silences them for a while."""

from __future__ import annotations

import time
from collections.abc import Callable

from assistant.agent.events import NotSaid
from assistant.agent.turn import Turn
from assistant.proactive.gate import GateRules, ProactiveGate
from assistant.proactive.look import Look, Woken
from assistant.protocol.common import Wire
from assistant.protocol.conversation import ReplyChunk, ReplyEnd, ReplyStart
from assistant.service.jobs import FromThread
from assistant.service.session import Session
from assistant.service.turns import Turns
from assistant.service.voice_relay import VoiceRelay
from assistant.settings import Settings

# Voice states in which the user speaks or is spoken to.
_VOICE_BUSY = ("hearing", "thinking", "speaking")


class ProactiveRelay:
    def __init__(
        self,
        settings: Settings,
        turns: Turns,
        voice: VoiceRelay,
        broadcast: Callable[[Wire], None],
        from_thread: FromThread,
        attached: Callable[[], int],
    ) -> None:
        """``attached``: how many clients are attached (a window open counts as the user
        being there)."""
        self.settings = settings
        self.turns = turns
        self.voice = voice
        self.broadcast = broadcast
        self.attached = attached
        self._look: Look | None = None
        self._wake = from_thread(self._wake_agent)

    @property
    def gate(self) -> ProactiveGate | None:
        return self._look.gate if self._look is not None else None

    def start(self, session: Session) -> None:
        gate = ProactiveGate(
            GateRules.of(self.settings.heartbeat),
            self._present,
            self._busy,
            self.settings.data_dir / "proactive.json",
            session.clock,
        )
        self._look = Look(session.watch, gate)

    def look(self) -> None:
        """From the heartbeat's thread: something changed since the agent last looked wakes
        it (nothing new asks no LLM anything)."""
        look = self._look
        if not self.settings.heartbeat.proactive or look is None or self.turns.busy:
            return
        woken = look.wake()
        if woken is not None:
            self._wake(woken)

    def heard(self, text: str) -> None:
        """The user's words (typed or spoken): a heartbeat's turn under way stops, and "not
        now" just after a proactive message silences them for a while."""
        self.turns.user_active()
        if self._look is not None:
            self._look.heard(text)

    def said_first(self) -> set[str]:
        """The messages said first (for the history a window is shown)."""
        return self._look.said_first() if self._look is not None else set()

    def _wake_agent(self, woken: object) -> None:
        if isinstance(woken, Woken):
            self.turns.heartbeat(woken.event, lambda number, turn: self._done(woken, number, turn))

    def _done(self, woken: Woken, number: int, turn: Turn) -> None:
        if self._look is None:
            return
        settled = self._look.settle(woken, turn)
        if settled.not_said is not None:
            self.turns.note(NotSaid(settled.not_said))
        if settled.said is not None:
            self._say(number, settled.said)

    def _say(self, number: int, text: str) -> None:
        self.broadcast(ReplyStart(turn=number, proactive=True))
        self.broadcast(ReplyChunk(turn=number, text=text))
        self.broadcast(ReplyEnd(turn=number, text=text))
        speech = self.voice.speak(number, None, unsaid=True)
        if speech is not None:
            speech.feed(text)
            speech.finish()

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
