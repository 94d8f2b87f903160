"""The turns: one queue, in order, of what the agent is to do (a turn from any client, a
spoken reply cut off, a note for the next turn, an endpoint switch) and the one loop that
takes them; what is under way and what waits, for `brain tasks` and for deciding when the
service may stop."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from assistant.agent.events import (
    Event,
    HeartbeatTick,
    MemoryChanged,
    NotSaid,
    ReminderDue,
    TaskFinished,
    UserText,
    UserUtterance,
)
from assistant.agent.turn import Turn as AgentTurn
from assistant.protocol.common import Notice, Wire
from assistant.protocol.conversation import (
    MAX_SAY_CHARS,
    ReplyChunk,
    ReplyEnd,
    ReplyStart,
    Say,
    UserSaid,
)
from assistant.protocol.tasks import Work
from assistant.service.jobs import FromThread
from assistant.service.llm_state import LLMState
from assistant.service.session import Opening, Session
from assistant.service.turn_stages import TurnStages
from assistant.service.voice_relay import VoiceRelay
from assistant.settings import Settings
from assistant.tasks.records import TaskRecord
from voice.timing import Timings

log = logging.getLogger(__name__)

SPOKEN_FAILURE = "Sorry, I cannot answer right now; the reason is on the screen."


@dataclass
class QueuedTurn:
    turn: int
    say: Say
    accepted_at: float = field(default_factory=time.monotonic)
    # A spoken turn's stage times, from the end of the user's speech.
    timings: Timings | None = None
    # Set for a turn no one said: what woke the agent (a task finished).
    event: Event | None = None
    # A heartbeat's turn: its reply is held, not streamed, and handed here when the turn
    # ends (whoever queued it decides whether it is said).
    held: Callable[[int, AgentTurn], None] | None = None


@dataclass
class HeardOnly:
    """A spoken reply was cut off: the agent's history keeps only ``heard``."""

    turn: int
    heard: str


@dataclass
class Note:
    """Something for the agent's next turn (the user changed a memory, a reminder fired),
    told between turns."""

    event: MemoryChanged | ReminderDue | NotSaid


@dataclass
class SwitchEndpoint:
    settings: Settings


@dataclass
class RunningTurn:
    turn: int
    cancel: threading.Event
    started_at: float = field(default_factory=time.monotonic)
    # A heartbeat's turn, which the user's words stop.
    heartbeat: bool = False


Job = QueuedTurn | SwitchEndpoint | HeardOnly | Note


class Turns:
    def __init__(
        self,
        opening: Opening,
        llm: LLMState,
        voice: VoiceRelay,
        broadcast: Callable[[Wire], None],
        from_thread: FromThread,
        stats: Callable[[], None],
        idle: Callable[[], None],
        stopping: Callable[[], bool],
    ) -> None:
        """``stats`` tells the clients the memory's counters after a turn; ``idle`` is told
        when the queue is done with a job (the service may stop); ``stopping``: the service
        is stopping (a task that ends then wakes no one)."""
        self.opening = opening
        self.llm = llm
        self.voice = voice
        self.broadcast = broadcast
        self.from_thread = from_thread
        self.stats = stats
        self.idle = idle
        self.stopping = stopping
        self.queue: asyncio.Queue[Job] = asyncio.Queue()
        self.running: RunningTurn | None = None
        # Turns accepted and not yet started, oldest first (what `brain tasks` shows).
        self.waiting: list[QueuedTurn] = []
        self.last = 0
        self._saving: asyncio.Future[None] | None = None

    @property
    def busy(self) -> bool:
        """A turn runs or waits."""
        return self.running is not None or bool(self.waiting)

    def accept(
        self, name: str, say: Say, tell: Callable[[Wire], None], timings: Timings | None = None
    ) -> None:
        """Queue a turn from ``name``; ``tell`` reaches whoever should hear it was refused."""
        text = say.text.strip()
        if not text:
            tell(Notice(text="empty message: nothing sent", level="warning"))
            return
        if len(text) > MAX_SAY_CHARS:
            tell(
                Notice(
                    text=f"not sent: the message is {len(text):,} characters; the limit is "
                    f"{MAX_SAY_CHARS:,}",
                    level="error",
                )
            )
            return
        if self.opening.failed():
            tell(Notice(text=f"not sent: {self.llm.text}", level="error"))
            return
        self.user_active()
        self.last += 1
        said = say.model_copy(update={"text": text})
        self.broadcast(
            UserSaid(
                turn=self.last,
                text=text,
                client=name,
                ref=say.ref,
                confidence=say.confidence,
            )
        )
        job = QueuedTurn(self.last, said, timings=timings)
        self.waiting.append(job)
        self.queue.put_nowait(job)

    def user_active(self) -> None:
        """The user speaks or sends words: a heartbeat's turn under way stops (what it
        found is looked at again at the next heartbeat)."""
        if self.running is not None and self.running.heartbeat:
            self.running.cancel.set()

    def heartbeat(self, event: HeartbeatTick, held: Callable[[int, AgentTurn], None]) -> bool:
        """Queue a heartbeat's turn when no other runs or waits; ``held`` gets its reply.
        False when the agent is busy (the next heartbeat looks again)."""
        if self.busy or self.opening.session is None or self.stopping():
            return False
        self.last += 1
        job = QueuedTurn(self.last, Say(text="[heartbeat]"), event=event, held=held)
        self.waiting.append(job)
        self.queue.put_nowait(job)
        return True

    def note(self, event: MemoryChanged | ReminderDue | NotSaid) -> None:
        """Tell the agent before its next turn."""
        self.queue.put_nowait(Note(event))

    def switch(self, settings: Settings) -> None:
        """Switch to the LLM of ``settings`` between turns."""
        self.queue.put_nowait(SwitchEndpoint(settings))

    def cancel(self) -> None:
        """Stop the reply being written; the delivered part is kept."""
        if self.running is not None:
            self.running.cancel.set()

    def cut(self, turn: int, heard: str) -> None:
        """The user cut off the spoken reply to ``turn``: stop writing it, and let the
        agent's history keep only what was heard (after the turn, in queue order)."""
        if self.running is not None and self.running.turn == turn:
            self.running.cancel.set()
        self.queue.put_nowait(HeardOnly(turn, heard))

    def task_finished(self, record: object) -> None:
        """A task ended: the master agent is woken to decide what to tell the user."""
        session = self.opening.session
        if not isinstance(record, TaskRecord) or session is None or self.stopping():
            return
        self.last += 1
        event = TaskFinished(record.id, record.summary())
        session.plan(f"task {event.summary}")
        say = Say(text=f"[task {record.id} {record.status}]")
        job = QueuedTurn(self.last, say, event=event)
        self.waiting.append(job)
        self.queue.put_nowait(job)

    async def run(self) -> None:
        """The agent loop: one job at a time, in order."""
        while True:
            job = await self.queue.get()
            if isinstance(job, SwitchEndpoint):
                session = await self.opening.wait()
                if session is not None:
                    await self.llm.switch(session, job.settings)
            elif isinstance(job, QueuedTurn):
                await self.llm.settled.wait()
                self.waiting.remove(job)
                session = self.opening.session
                if session is None:
                    self.broadcast(
                        ReplyEnd(turn=job.turn, text="", error=f"not saved: {self.llm.text}")
                    )
                else:
                    await self._reply(session, job)
            elif (session := self.opening.session) is not None:
                if isinstance(job, HeardOnly):
                    # Shielded and kept: a shutdown waits for it rather than dropping it.
                    self._saving = asyncio.ensure_future(
                        asyncio.to_thread(session.agent.heard_only, job.heard)
                    )
                    await asyncio.shield(self._saving)
                else:
                    await asyncio.to_thread(session.agent.note, job.event)
            self.idle()

    async def _reply(self, session: Session, job: QueuedTurn) -> None:
        running = RunningTurn(job.turn, threading.Event(), heartbeat=job.held is not None)
        self.running = running
        if job.held is not None:
            await self._held(session, job, running)
            return
        self.broadcast(ReplyStart(turn=job.turn))
        say = job.say
        event = job.event or (
            UserText(say.text)
            if say.confidence is None
            else UserUtterance(say.text, say.confidence)
        )
        show = self.from_thread(lambda text: self.broadcast(ReplyChunk(turn=job.turn, text=text)))
        speech = self.voice.speak(job.turn, job.timings, job.event is not None)
        stages = TurnStages(job.accepted_at)
        stages.mark("started")
        timings = job.timings

        def chunk(text: str) -> None:
            stages.saw_text(text)
            show(text)
            if speech is not None:
                speech.feed(text)

        def on_stage(stage: str) -> None:
            stages.mark(stage)
            if timings is not None:
                timings.mark(stage)

        self.voice.thinking(True)
        try:
            turn = await asyncio.to_thread(
                session.agent.respond,
                event,
                on_text=chunk,
                cancel=running.cancel,
                on_stage=on_stage,
            )
            if speech is not None and turn.error and not turn.reply:
                speech.feed(SPOKEN_FAILURE)  # the reason is on screen; a listener hears this
        finally:
            self.running = None
            self.voice.thinking(False)
            if speech is not None:
                speech.finish()
        stages.mark("reply_end")
        stages_ms = stages.since_accepted_ms()
        log.info("turn %d stages: %s", job.turn, stages_ms)
        self.broadcast(
            ReplyEnd(
                turn=job.turn,
                text=turn.reply,
                interrupted=turn.interrupted,
                error=turn.error if not turn.reply else None,
                stages_ms=stages_ms,
            )
        )
        if isinstance(job.event, TaskFinished):
            session.tasks.reported(job.event.task_id)
        if job.event is None:
            session.heard(say.text)
        session.after_turn()
        self.stats()

    async def _held(self, session: Session, job: QueuedTurn, running: RunningTurn) -> None:
        """A heartbeat's turn: nothing is shown or spoken while it runs."""
        assert job.event is not None and job.held is not None
        try:
            turn = await asyncio.to_thread(session.agent.respond, job.event, cancel=running.cancel)
        finally:
            self.running = None
        job.held(job.turn, turn)
        self.stats()

    def work(self) -> list[Work]:
        now = time.monotonic()
        work: list[Work] = []
        if self.running is not None:
            work.append(
                Work(
                    kind="reply",
                    description=f"writing the reply to turn {self.running.turn}",
                    seconds=now - self.running.started_at,
                )
            )
        if self.llm.switching:
            work.append(Work(kind="switch", description="switching to a new LLM endpoint"))
        work.extend(
            Work(
                kind="queued",
                description=f"turn {job.turn}: {job.say.text[:60]}",
                seconds=now - job.accepted_at,
            )
            for job in self.waiting
        )
        session = self.opening.session
        pending = session.ratings_pending() if session is not None else 0
        if pending:
            work.append(
                Work(
                    kind="ratings",
                    description=(
                        f"{pending} stored {'memory' if pending == 1 else 'memories'} to rate "
                        "on the new importance scale"
                    ),
                )
            )
        return work

    def pending(self) -> str | None:
        queued = len(self.waiting)
        if self.running is not None or queued:
            turns = queued + (self.running is not None)
            return f"finishing {turns} turn{'s' if turns > 1 else ''}"
        if self.llm.switching:
            return "switching the LLM endpoint"
        session = self.opening.session
        tasks = session.tasks.scheduled() if session is not None else 0
        if tasks:
            return f"running {tasks} task{'s' if tasks > 1 else ''}"
        if not self.queue.empty():  # what remains is bookkeeping (a cut reply, a switch)
            return "saving the last changes"
        return None

    async def saved(self) -> None:
        """Wait for a cut reply being saved."""
        if self._saving is not None:
            await asyncio.gather(self._saving, return_exceptions=True)

    async def save_queued(self) -> None:
        """Replies cut off and memory changes that the agent's history does not show yet
        (the clients were told of them, so that must not be lost)."""
        session = self.opening.session
        while not self.queue.empty():
            job = self.queue.get_nowait()
            if session is None:
                continue
            if isinstance(job, HeardOnly):
                await asyncio.to_thread(session.agent.heard_only, job.heard)
            elif isinstance(job, Note):
                await asyncio.to_thread(session.agent.note, job.event)
