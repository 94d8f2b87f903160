"""``brain serve``: the one process that owns the memory store, the agent and the LLM.

Clients (the TUI, ``brain chat``, ``brain ask``, ``brain tasks``) connect over a Unix socket
(protocol.py). Turns from every client go through one queue to one agent; every update goes
to every client. When the last client leaves the service stops, unless work is pending or
``service.background`` is set.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assistant.agent.events import (
    Event,
    MemoryChanged,
    ReminderDue,
    TaskFinished,
    UserText,
    UserUtterance,
)
from assistant.agent.tools import Stores
from assistant.config import ConfigError, LoadedConfig, settings_seen
from assistant.garbage import settle_garbage, unsettle_garbage
from assistant.llm.server import ServerState, ServerStatus
from assistant.protocol import decode_request, describe, encode
from assistant.protocol.common import (
    MAX_LINE_BYTES,
    PROTOCOL_VERSION,
    Failed,
    Notice,
    ProtocolError,
    Wire,
)
from assistant.protocol.conversation import (
    MAX_SAY_CHARS,
    SENTENCE_ENDS,
    Bye,
    Cancel,
    Draft,
    Hello,
    History,
    HistoryItem,
    Leave,
    Left,
    Progress,
    ReplyChunk,
    ReplyEnd,
    ReplyStart,
    Retry,
    Say,
    ServiceState,
    Status,
    Stop,
    UserSaid,
    Welcome,
)
from assistant.protocol.memory import MemoryChangedByUser, MemoryStats
from assistant.protocol.tasks import (
    ApprovalAsked,
    Work,
)
from assistant.service.desks import graph as graph_desk
from assistant.service.desks import memory as memory_desk
from assistant.service.desks.common import MEMORY_ERRORS, Reply, one_line
from assistant.service.desks.memory import MemoryDesk
from assistant.service.desks.task_rows import approval_row
from assistant.service.desks.tasks import TaskDesk
from assistant.service.host import STARTUP_ERRORS, AgentHost
from assistant.service.hub import Client
from assistant.service.paths import OwnerLock, private_dir, socket_path
from assistant.service.requests import Requests
from assistant.service.task_relay import TaskRelay
from assistant.service.voice import VoiceBridge
from assistant.service.voice_relay import VoiceRelay
from assistant.settings import Settings
from assistant.tasks.records import TaskRecord
from memory.embedder import Embedder
from models import Progress as WeightProgress
from voice.timing import Timings

log = logging.getLogger(__name__)

HISTORY_SHOWN = 40
ATTACHED_ALREADY = Notice(text="already attached", level="warning")
SPOKEN_FAILURE = "Sorry, I cannot answer right now; the reason is on the screen."
HELLO_TIMEOUT_S = 10.0
# How often the memory's counters are checked for the clients' status bars.
STATS_POLL_S = 1.0
# How long a new service waits for one that is shutting down to let go of the data folder.
OWNER_WAIT_S = 15.0


class AlreadyRunning(Exception):
    """Another service owns this data folder."""


@dataclass
class QueuedTurn:
    turn: int
    say: Say
    accepted_at: float = field(default_factory=time.monotonic)
    # A spoken turn's stage times, from the end of the user's speech.
    timings: Timings | None = None
    # Set for a turn no one said: what woke the agent (a task finished).
    event: Event | None = None


@dataclass
class HeardOnly:
    """A spoken reply was cut off: the agent's history keeps only ``heard``."""

    turn: int
    heard: str


@dataclass
class Note:
    """Something for the agent's next turn (the user changed a memory, a reminder fired),
    told between turns."""

    event: MemoryChanged | ReminderDue


@dataclass
class SwitchEndpoint:
    settings: Settings


@dataclass
class RunningTurn:
    turn: int
    cancel: threading.Event
    started_at: float = field(default_factory=time.monotonic)


class AssistantService:
    def __init__(
        self,
        loaded: LoadedConfig,
        reload: Callable[[], LoadedConfig] | None = None,
        embedder: Embedder | None = None,
        first_client_timeout_s: float = 60.0,
        config_poll_s: float = 2.0,
        owner_wait_s: float = OWNER_WAIT_S,
    ) -> None:
        self.loaded = loaded
        self.settings = loaded.settings
        self.reload = reload
        self.socket = socket_path(self.settings)
        self.first_client_timeout_s = first_client_timeout_s
        self.config_poll_s = config_poll_s
        self.owner_wait_s = owner_wait_s
        self.state: ServiceState = "starting"
        self.state_text = "starting"
        self.clients: list[Client] = []
        self.queue: asyncio.Queue[QueuedTurn | SwitchEndpoint | HeardOnly | Note] = asyncio.Queue()
        self.running: RunningTurn | None = None
        # A draft being read ahead (``_read_draft``), and the newest one that came meanwhile.
        self._drafting: asyncio.Task[bool] | None = None
        self._next_draft: str | None = None
        # Turns accepted and not yet started, oldest first (what `brain tasks` shows).
        self.waiting: list[QueuedTurn] = []
        self.switching = False
        self._turns = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop = asyncio.Event()
        self._memory_settled = asyncio.Event()
        # Set while no LLM start is under way: turns wait for the outcome rather than
        # spending their retries on a server that is still loading.
        self._llm_settled = asyncio.Event()
        self._starting: asyncio.Task[None] | None = None
        self._voice_start: asyncio.Task[None] | None = None
        self._requests: set[asyncio.Task[None]] = set()
        self._saving: asyncio.Future[None] | None = None
        self._background_start: asyncio.Task[None] | None = None
        self._lock = OwnerLock(self.settings.data_dir)
        self._ever_connected = False
        self._stats_sent: MemoryStats | None = None
        self.voice = VoiceRelay(
            self.settings,
            VoiceBridge(
                self.settings,
                self._from_thread(lambda event: self.voice.on_event(event)),
                core=lambda: self.host.stores.core if self.host.stores is not None else None,
            )
            if self.settings.voice.enabled
            else None,
            self._broadcast,
            self._accept,
            lambda text, paused: self._read_draft(text, speculate=paused),
            self._cut,
            lambda: self._turns,
        )
        self.task_relay = TaskRelay(
            self.settings,
            self._broadcast,
            self._from_thread,
            lambda event: self.queue.put_nowait(Note(event)),
            self.voice.say_aloud,
        )
        self.host = AgentHost(
            self.settings,
            self._from_thread(self._progress),
            self._from_thread(self._llm_status),
            embedder=embedder,
            approvals=self.task_relay.approvals(),
            on_task_finished=self._from_thread(self._task_finished),
            on_reminder_added=self.task_relay.reminder_added,
        )
        self.ready = threading.Event()  # set once the socket listens (for in-process callers)
        self.task_desk = TaskDesk(
            self.host,
            lambda: self.state_text,
            self.work,
            lambda: self.task_relay.heartbeat,
            self._spawn,
            self._broadcast_stats,
        )
        self.requests = Requests()
        self._register()

    # Running

    async def serve(self) -> None:
        """Listen until stopped; raises AlreadyRunning if another service owns the folder."""
        self._loop = asyncio.get_running_loop()
        # A service that answers on the socket owns the folder: leave at once (two clients
        # started one each). One that does not answer is shutting down: wait for it.
        owned = self._lock.acquire() or (
            not await self._socket_answers()
            and await asyncio.to_thread(self._lock.acquire, self.owner_wait_s)
        )
        if not owned:
            raise AlreadyRunning(
                f"a Brain OS service (pid {self._lock.holder()}) already owns "
                f"{self.settings.data_dir}"
            )
        try:
            server = await self._listen()
        except BaseException:
            self._lock.release()
            raise
        log.info("listening on %s (pid %d)", self.socket, os.getpid())
        self.ready.set()
        background = [
            asyncio.create_task(self._agent_loop()),
            asyncio.create_task(self._watch_config()),
            asyncio.create_task(self._stop_if_nobody_comes()),
            asyncio.create_task(self._watch_memory()),
        ]
        self._starting = asyncio.create_task(self._start())
        try:
            await self._stop.wait()
        finally:
            await self._shut_down(server, background)

    def stop(self, reason: str = "stopped") -> None:
        if not self._stop.is_set():
            log.info("stopping: %s", reason)
            self._broadcast(Bye(reason=reason))
            self._stop.set()

    async def _socket_answers(self) -> bool:
        try:
            _, writer = await asyncio.open_unix_connection(str(self.socket))
        except OSError:
            return False
        writer.close()
        return True

    async def _listen(self) -> asyncio.Server:
        private_dir(self.socket.parent)
        if self.socket.exists() or self.socket.is_symlink():
            # We hold the owner lock, so whoever made this socket is gone.
            log.info("removing the stale socket %s", self.socket)
            self.socket.unlink()
        umask = os.umask(0o177)
        try:
            server = await asyncio.start_unix_server(
                self._serve_client, path=str(self.socket), limit=MAX_LINE_BYTES
            )
        finally:
            os.umask(umask)
        self.socket.chmod(0o600)
        return server

    async def _shut_down(self, server: asyncio.Server, tasks: list[asyncio.Task[None]]) -> None:
        self.state = "stopping"
        if self.running is not None:
            self.running.cancel.set()
        self.voice.stop_speaking()
        server.close()
        for client in self.clients:
            client.writer.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
        await self.voice.close()
        if self._saving is not None:
            await asyncio.gather(self._saving, return_exceptions=True)
        await self.task_relay.close()
        if self.host.tasks is not None:
            await self.host.tasks.close()
        await self._save_queued()
        await asyncio.to_thread(self.host.close)
        self._lock.release()
        unsettle_garbage()
        log.info("stopped")

    async def _save_queued(self) -> None:
        """Replies cut off and memory changes that the agent's history does not show yet
        (the clients were told of them, so that must not be lost)."""
        while not self.queue.empty():
            job = self.queue.get_nowait()
            if self.host.agent is None:
                continue
            if isinstance(job, HeardOnly):
                await asyncio.to_thread(self.host.heard_only, job.heard)
            elif isinstance(job, Note):
                await asyncio.to_thread(self.host.note, job.event)

    async def _start(self) -> None:
        try:
            await asyncio.to_thread(self.host.open_memory)
        except STARTUP_ERRORS as error:
            self._set_state("failed", f"the memory could not be opened: {error}")
            self._llm_settled.set()
            self.voice.settled.set()
            return
        finally:
            self._memory_settled.set()
        self._broadcast(History(items=self._history()))
        self._broadcast_stats()
        tasks, reminders = self.host.tasks, self.host.reminders
        if tasks is not None and reminders is not None and self._loop is not None:
            self.task_relay.start(
                self._loop,
                tasks,
                reminders,
                self.host.approvals,
                self.host.after_turn,
                self.host.plan,
            )
        self._voice_start = asyncio.create_task(self.voice.start())
        await self._start_llm()
        # Started (the clients already have the history): nearly all the service holds now
        # stays until it stops.
        settle_garbage()

    async def _start_llm(self) -> None:
        self._llm_settled.clear()
        self._set_state("starting", f"starting {self.host.describe_endpoint()}")
        try:
            warning = await asyncio.to_thread(self.host.start_llm)
        except STARTUP_ERRORS as error:
            self.host.llm_failed(str(error))
            self._set_state("failed", f"LLM unavailable: {error}")
            return
        finally:
            self._llm_settled.set()
        self._set_state("ready", f"ready: {self.host.describe_endpoint()}")
        if warning:
            self._broadcast(
                Notice(text=f"connected, but the first request failed: {warning}", level="warning")
            )
        self._start_background()

    async def _stop_if_nobody_comes(self) -> None:
        await asyncio.sleep(self.first_client_timeout_s)
        if not self._ever_connected:
            self._stop_when_idle()

    # Clients

    async def _serve_client(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        client: Client | None = None
        try:
            line = await asyncio.wait_for(reader.readline(), HELLO_TIMEOUT_S)
            hello = self._hello(line, writer)
            if hello is None:
                return
            client = Client(hello.client, writer)
            self.clients.append(client)
            self._ever_connected = True
            client.send(self._welcome())
            # A question a task waits on is put to a window that opens meanwhile.
            for task_id, question in self.host.approvals.pending():
                client.send(ApprovalAsked(approval=approval_row(task_id, question)))
            log.info("%s attached (%d attached)", client.name, len(self.clients))
            while line := await reader.readline():
                try:
                    request = decode_request(line)
                except (ProtocolError, ValidationError) as error:
                    client.send(Notice(text=describe(error), level="error"))
                    continue
                self.requests.handle(client, request)
                await writer.drain()
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            pass
        except ValueError:  # a line longer than MAX_LINE_BYTES: the stream cannot go on
            if client is not None:
                client.send(Notice(text="message too long; disconnecting", level="error"))
        finally:
            writer.close()
            # A connection that never said hello (a probe) does not count as a client leaving.
            if client is not None:
                self.clients.remove(client)
                log.info("%s left (%d attached)", client.name, len(self.clients))
                self._stop_when_idle()

    def _hello(self, line: bytes, writer: asyncio.StreamWriter) -> Hello | None:
        try:
            hello = decode_request(line)
        except (ProtocolError, ValidationError) as error:
            hello_error = describe(error)
        else:
            if not isinstance(hello, Hello):
                hello_error = "the first message must be hello"
            elif hello.version != PROTOCOL_VERSION:
                hello_error = (
                    f"protocol version {hello.version} is not supported; this service speaks "
                    f"version {PROTOCOL_VERSION} (restart it with `brain stop`)"
                )
            else:
                return hello
        writer.write(encode(Notice(text=hello_error, level="error")))
        return None

    def _welcome(self) -> Welcome:
        return Welcome(
            pid=os.getpid(),
            state=self.state,
            text=self.state_text,
            endpoint=self.host.describe_endpoint(),
            background=self.settings.service.background,
            history=self._history(),
            voice=self.voice.status,
            memory=self._stats(),
            settings=settings_seen(self.settings),
        )

    def _history(self) -> list[HistoryItem]:
        return [
            HistoryItem(role="user" if m.role == "user" else "assistant", text=m.text)
            for m in self.host.history(HISTORY_SHOWN)
        ]

    def _register(self) -> None:
        """Every request's handler: the conversation's and voice's here, the other domains'
        from their desks."""
        add = self.requests.add
        add(Say, lambda client, request: self._accept(client.name, request, client.send))
        add(
            Draft,
            lambda client, request: self._read_draft(
                request.text, speculate=request.text.endswith(SENTENCE_ENDS)
            ),
        )
        add(Cancel, self._cancel)
        self.voice.register(self.requests, self._spawn)
        add(Retry, self._retry)
        add(Leave, self._leave)
        add(Stop, lambda client, request: self.stop(f"stopped by {client.name}"))
        add(Hello, lambda client, request: client.send(ATTACHED_ALREADY))
        memory_desk.register(self.requests, self._in_worker)
        graph_desk.register(self.requests, self._in_worker)
        self.task_desk.register(self.requests)

    def _cancel(self, client: Client, request: Cancel) -> None:
        if self.running is not None:
            self.running.cancel.set()
        self.voice.stop_speaking()

    def _retry(self, client: Client, request: Retry) -> None:
        if self.state == "failed" and self.host.agent is not None:
            self._starting = asyncio.create_task(self._start_llm())

    def _leave(self, client: Client, request: Leave) -> None:
        stays, reason = self._stays_without(client)
        client.send(Left(stays=stays, reason=reason))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        # Tracked, so the task is not collected before it has run.
        task = asyncio.create_task(work)
        self._requests.add(task)
        task.add_done_callback(self._requests.discard)

    def _accept(
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
        if self._memory_settled.is_set() and self.host.agent is None:
            tell(Notice(text=f"not sent: {self.state_text}", level="error"))
            return
        self._turns += 1
        said = say.model_copy(update={"text": text})
        self._broadcast(
            UserSaid(
                turn=self._turns,
                text=text,
                client=name,
                ref=say.ref,
                confidence=say.confidence,
            )
        )
        job = QueuedTurn(self._turns, said, timings=timings)
        self.waiting.append(job)
        self.queue.put_nowait(job)

    def _read_draft(self, text: str, speculate: bool = False) -> None:
        """Read a draft ahead while no turn runs or waits: one at a time, and of the drafts
        that come during a read only the newest is read next (a turn that starts meanwhile
        waits at most for the read under way to end). ``speculate``: the words heard at a
        pause in speech, or a typed draft that ends a sentence, likely the turn, whose reply
        is asked for at once (the next draft drops it)."""
        if self.running is not None or self.waiting:
            return
        if not text.strip() or len(text) > MAX_SAY_CHARS:
            return
        if speculate:
            # Not queued behind a read under way: the speculation's request is sent now, and
            # the server takes it as soon as that read ends (drafts queued before it are
            # older words).
            self._next_draft = None
            self._spawn(self._speculate(text))
            return
        if self._drafting is not None:
            self._next_draft = text
            return
        reading = asyncio.to_thread(self.host.read_draft, text)
        self._drafting = asyncio.create_task(reading)
        self._drafting.add_done_callback(self._draft_done)

    async def _speculate(self, text: str) -> None:
        try:
            await asyncio.to_thread(self.host.read_draft, text, True)
        except Exception as error:  # the turn asks for its reply itself
            log.warning("asking for the reply at a pause failed: %s", error)

    def _draft_done(self, task: asyncio.Task[bool]) -> None:
        self._drafting = None
        if not task.cancelled() and task.exception() is not None:
            log.warning("reading a draft ahead failed: %s", task.exception())
        newer, self._next_draft = self._next_draft, None
        if newer is not None:
            self._read_draft(newer)

    def _broadcast(self, message: Wire) -> None:
        for client in self.clients:
            client.send(message)

    # The agent

    async def _agent_loop(self) -> None:
        while True:
            job = await self.queue.get()
            if isinstance(job, SwitchEndpoint):
                await self._switch(job.settings)
            elif isinstance(job, HeardOnly):
                if self.host.agent is not None:
                    # Shielded and kept: a shutdown waits for it rather than dropping it.
                    self._saving = asyncio.ensure_future(
                        asyncio.to_thread(self.host.heard_only, job.heard)
                    )
                    await asyncio.shield(self._saving)
            elif isinstance(job, Note):
                if self.host.agent is not None:
                    await asyncio.to_thread(self.host.note, job.event)
            else:
                await self._llm_settled.wait()
                self.waiting.remove(job)
                if self.host.agent is None:
                    self._broadcast(
                        ReplyEnd(turn=job.turn, text="", error=f"not saved: {self.state_text}")
                    )
                else:
                    await self._reply(job)
            self._stop_when_idle()

    async def _reply(self, job: QueuedTurn) -> None:
        running = RunningTurn(job.turn, threading.Event())
        self.running = running
        self._broadcast(ReplyStart(turn=job.turn))
        say = job.say
        event = job.event or (
            UserText(say.text)
            if say.confidence is None
            else UserUtterance(say.text, say.confidence)
        )
        show = self._from_thread(lambda text: self._broadcast(ReplyChunk(turn=job.turn, text=text)))
        speech = self.voice.speak(job.turn, job.timings, job.event is not None)

        def chunk(text: str) -> None:
            show(text)
            if speech is not None:
                speech.feed(text)

        self.voice.thinking(True)
        try:
            timings = job.timings
            turn = await asyncio.to_thread(
                self.host.respond,
                event,
                chunk,
                running.cancel,
                timings.mark if timings is not None else lambda stage: None,
            )
            if speech is not None and turn.error and not turn.reply:
                speech.feed(SPOKEN_FAILURE)  # the reason is on screen; a listener hears this
        finally:
            self.running = None
            self.voice.thinking(False)
            if speech is not None:
                speech.finish()
        self._broadcast(
            ReplyEnd(
                turn=job.turn,
                text=turn.reply,
                interrupted=turn.interrupted,
                error=turn.error if not turn.reply else None,
            )
        )
        if isinstance(job.event, TaskFinished) and self.host.tasks is not None:
            self.host.tasks.reported(job.event.task_id)
        if job.event is None:
            self.host.heard(say.text)
        self.host.after_turn()
        self._broadcast_stats()

    async def _switch(self, settings: Settings) -> None:
        self.switching = True
        before = self.host.describe_endpoint()
        self._set_state("starting", f"switching the LLM from {before}")
        try:
            warning = await asyncio.to_thread(self.host.start_llm, settings)
        except STARTUP_ERRORS as error:
            if self.host.llm.client is not None:
                self._set_state("ready", f"ready: {before}")
                self._broadcast(
                    Notice(
                        text=f"could not switch the LLM ({error}); still using {before}",
                        level="error",
                    )
                )
            else:
                self.host.llm_failed(str(error))
                self._set_state("failed", f"LLM unavailable: {error}")
            return
        finally:
            self.switching = False
        self._set_state("ready", f"ready: {self.host.describe_endpoint()}")
        self._broadcast(Notice(text=f"the LLM is now {self.host.describe_endpoint()}"))
        if warning:
            self._broadcast(Notice(text=f"the first request failed: {warning}", level="warning"))
        self._start_background()

    def _start_background(self) -> None:
        """Background work's own LLM server starts after the reply path is ready; turns do
        not wait for it."""
        self._background_start = asyncio.create_task(asyncio.to_thread(self.host.start_background))
        # The heartbeat's first tick came before an LLM was up: the day plan is due now.
        self._background_start.add_done_callback(lambda _: self.host.plan())

    # Memory

    def _in_worker(self, answer: Callable[[Stores, Any], Reply]) -> Callable[[Client, Any], None]:
        return lambda client, request: self._spawn(self._memory_request(client, request, answer))

    async def _memory_request(
        self, client: Client, request: Any, answer: Callable[[Stores, Any], Reply]
    ) -> None:
        """Answer a memory request in a worker thread (a reply being written does not hold it
        up); a change is told to every client and, before its next turn, to the agent."""
        await self._memory_settled.wait()
        if self.host.stores is None:
            client.send(Failed(ref=request.ref, text=f"the memory is not open: {self.state_text}"))
            return
        stores = self.host.stores
        try:
            reply, changed = await asyncio.to_thread(answer, stores, request)
        except MEMORY_ERRORS as error:
            client.send(Failed(ref=request.ref, text=one_line(error)))
            return
        client.send(reply)
        if changed is not None:
            record_id, text = changed
            log.info("%s %s", client.name, text)
            self._broadcast(MemoryChangedByUser(id=record_id, text=text))
            self._broadcast_stats()
            self.queue.put_nowait(Note(MemoryChanged(text)))
            self.host.plan(f"the user {text}")

    async def _watch_memory(self) -> None:
        """Tell clients when the memory count or its background work changes (ratings done,
        a reflection started or stored): cheap, from in-memory counters."""
        while True:
            await asyncio.sleep(STATS_POLL_S)
            if self.clients:
                self._broadcast_stats(only_if_changed=True)

    def _stats(self) -> MemoryStats | None:
        if self.host.stores is None:
            return None
        return MemoryDesk(self.host.stores).stats(self.host.reflecting())

    def _broadcast_stats(self, only_if_changed: bool = False) -> None:
        stats = self._stats()
        if stats is not None and not (only_if_changed and stats == self._stats_sent):
            self._stats_sent = stats
            self._broadcast(stats)

    def _cut(self, turn: int, heard: str) -> None:
        """The user cut off the spoken reply to ``turn``: stop writing it, and let the
        agent's history keep only what was heard (after the turn, in queue order)."""
        if self.running is not None and self.running.turn == turn:
            self.running.cancel.set()
        self.queue.put_nowait(HeardOnly(turn, heard))

    def _task_finished(self, record: object) -> None:
        """A task ended: the master agent is woken to decide what to tell the user."""
        if not isinstance(record, TaskRecord) or self._stop.is_set():
            return
        self._turns += 1
        event = TaskFinished(record.id, record.summary())
        self.host.plan(f"task {event.summary}")
        say = Say(text=f"[task {record.id} {record.status}]")
        job = QueuedTurn(self._turns, say, event=event)
        self.waiting.append(job)
        self.queue.put_nowait(job)

    # Work and lifetime

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
        if self.switching:
            work.append(Work(kind="switch", description="switching to a new LLM endpoint"))
        work.extend(
            Work(
                kind="queued",
                description=f"turn {job.turn}: {job.say.text[:60]}",
                seconds=now - job.accepted_at,
            )
            for job in self.waiting
        )
        pending = self.host.ratings_pending()
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

    def _pending(self) -> str | None:
        queued = len(self.waiting)
        if self.running is not None or queued:
            turns = queued + (self.running is not None)
            return f"finishing {turns} turn{'s' if turns > 1 else ''}"
        if self.switching:
            return "switching the LLM endpoint"
        tasks = self.host.tasks.scheduled() if self.host.tasks is not None else 0
        if tasks:
            return f"running {tasks} task{'s' if tasks > 1 else ''}"
        if not self.queue.empty():  # what remains is bookkeeping (a cut reply, a switch)
            return "saving the last changes"
        return None

    def _stays_without(self, leaving: Client | None) -> tuple[bool, str]:
        others = [c for c in self.clients if c is not leaving]
        if others:
            return True, f"{len(others)} other client{'s' if len(others) > 1 else ''} attached"
        if self.settings.service.background:
            return True, "service.background = true"
        pending = self._pending()
        if pending:
            return True, f"{pending}, then it stops"
        return False, "no work pending"

    def _stop_when_idle(self) -> None:
        if not self._stays_without(None)[0] and not self._stop.is_set():
            self.stop("the last client left and no work is pending")

    async def _watch_config(self) -> None:
        if self.reload is None:
            return
        path = self.loaded.config_file
        seen = _stamp(path)
        while True:
            await asyncio.sleep(self.config_poll_s)
            stamp = _stamp(path)
            if stamp == seen:
                continue
            seen = stamp
            try:
                loaded = self.reload()
            except ConfigError as error:
                self._broadcast(
                    Notice(
                        text=f"config not applied, keeping the current settings: {error}",
                        level="error",
                    )
                )
                continue
            self._apply(loaded.settings)

    def _apply(self, settings: Settings) -> None:
        if settings.llm != self.settings.llm:
            self.queue.put_nowait(SwitchEndpoint(settings))
        if settings.service != self.settings.service:
            self._broadcast(Notice(text=f"service.background = {settings.service.background}"))
        later = [
            name
            for name in ("profile", "data_dir", "stt", "tts", "embedder", "audio", "voice", "agent")
            if getattr(settings, name) != getattr(self.settings, name)
        ]
        if later:
            self._broadcast(
                Notice(
                    text=f"changed settings ({', '.join(later)}) take effect when the service "
                    "restarts (`brain stop`)",
                    level="warning",
                )
            )
        self.settings = self.settings.model_copy(
            update={"llm": settings.llm, "service": settings.service}
        )

    # From threads to the loop

    def _from_thread(self, handler: Callable[[object], None]) -> Callable[[object], None]:
        def call(value: object) -> None:
            if self._loop is not None and not self._loop.is_closed():
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    self._loop.call_soon_threadsafe(handler, value)

        return call

    def _progress(self, value: object) -> None:
        if isinstance(value, WeightProgress):
            self._broadcast(
                Progress(
                    label=f"{value.action} {value.weight_id} ({value.file_name})",
                    done=value.done,
                    total=value.total,
                    action=value.action,
                )
            )

    def _llm_status(self, value: object) -> None:
        if isinstance(value, ServerStatus) and value.state != ServerState.READY:
            state: ServiceState = "failed" if value.state == ServerState.FAILED else "starting"
            self._set_state(state, value.message)

    def _set_state(self, state: ServiceState, text: str) -> None:
        self.state, self.state_text = state, text
        self._broadcast(Status(state=state, text=text, endpoint=self.host.describe_endpoint()))


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def run_service(loaded: LoadedConfig, reload: Callable[[], LoadedConfig]) -> int:
    """``brain serve``: run until stopped (by a client, a signal, or nobody needing it).
    Returns 0 also when another service already owns the folder: clients attach to that one."""
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    service = AssistantService(loaded, reload)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(signum, service.stop, f"signal {signal.Signals(signum).name}")
        await service.serve()

    try:
        asyncio.run(main())
    except AlreadyRunning as error:
        log.info("%s", error)
    return 0
