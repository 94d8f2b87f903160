"""``brain serve``: the one process that owns the memory store, the agent and the LLM.

Clients (the TUI, ``brain chat``, ``brain ask``, ``brain tasks``) connect over a Unix socket
(assistant/protocol). Turns from every client go through one queue to one agent; every update
goes to every client. When the last client leaves the service stops, unless work is pending or
``service.background`` is set.

``AssistantService`` holds the lifetime and the socket, and composes the parts: the clients
(hub.py), the turns (turns.py, drafts.py), the LLM's state (llm_state.py), the memory
(memory_relay.py), voice (voice_relay.py), tasks (task_relay.py, desks/tasks.py), the live
vault (vault_relay.py) and the config file (config_watch.py); the session (session.py) is
what opening the memory starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable

from assistant.config import LoadedConfig, settings_seen
from assistant.garbage import settle_garbage, unsettle_garbage
from assistant.protocol.common import MAX_LINE_BYTES, Notice, Wire
from assistant.protocol.conversation import (
    SENTENCE_ENDS,
    Bye,
    Cancel,
    Draft,
    Hello,
    History,
    Leave,
    Retry,
    Say,
    Stop,
    Welcome,
)
from assistant.protocol.tasks import ApprovalAsked
from assistant.service.config_watch import ConfigWatch
from assistant.service.desks.task_rows import approval_row
from assistant.service.desks.tasks import TaskDesk
from assistant.service.drafts import Drafts
from assistant.service.hub import Client, Hub
from assistant.service.jobs import Jobs
from assistant.service.llm_state import LLMState
from assistant.service.llms import STARTUP_ERRORS, LLMs
from assistant.service.memory_relay import MemoryRelay
from assistant.service.paths import OwnerLock, private_dir, socket_path
from assistant.service.proactive_relay import ProactiveRelay
from assistant.service.requests import Requests
from assistant.service.session import Opening, Session, close_session, open_session
from assistant.service.task_relay import TaskRelay
from assistant.service.turns import Turns
from assistant.service.vault_relay import VaultRelay
from assistant.service.vault_watch import Timing
from assistant.service.voice import VoiceBridge
from assistant.service.voice_relay import VoiceRelay
from memory.embedder import Embedder
from voice.timing import Timings

log = logging.getLogger(__name__)

ATTACHED_ALREADY = Notice(text="already attached", level="warning")
# How long a new service waits for one that is shutting down to let go of the data folder.
OWNER_WAIT_S = 15.0
VAULT_TIMING = Timing()


class AlreadyRunning(Exception):
    """Another service owns this data folder."""


class AssistantService:
    def __init__(
        self,
        loaded: LoadedConfig,
        reload: Callable[[], LoadedConfig] | None = None,
        embedder: Embedder | None = None,
        first_client_timeout_s: float = 60.0,
        config_poll_s: float = 2.0,
        owner_wait_s: float = OWNER_WAIT_S,
        vault_timing: Timing = VAULT_TIMING,
    ) -> None:
        settings = loaded.settings
        self.settings = settings
        self.embedder = embedder
        self.socket = socket_path(settings)
        self.first_client_timeout_s = first_client_timeout_s
        self.owner_wait_s = owner_wait_s
        self._stop = asyncio.Event()
        self._lock = OwnerLock(settings.data_dir)
        self.ready = threading.Event()  # set once the socket listens (for in-process callers)
        self._starting: asyncio.Task[None] | None = None
        self._voice_start: asyncio.Task[None] | None = None
        self.jobs = Jobs()
        self.requests = Requests()
        self.opening = Opening()
        self.hub = Hub(
            self.requests.handle,
            self._greet,
            lambda: self.config.settings.service.background,
            lambda: self.turns.pending(),
            self._stop_when_idle,
        )
        broadcast = self.hub.broadcast
        self.llms = LLMs(
            settings,
            self.jobs.from_thread(lambda value: self.llm.on_progress(value)),
            self.jobs.from_thread(lambda value: self.llm.on_status(value)),
        )
        self.llm = LLMState(self.llms, broadcast)
        self.voice = VoiceRelay(
            settings,
            VoiceBridge(
                settings,
                self.jobs.from_thread(lambda event: self.voice.on_event(event)),
                core=lambda: self.opening.session.stores.core if self.opening.session else None,
            )
            if settings.voice.enabled
            else None,
            broadcast,
            self._accept,
            self._draft,
            lambda turn, heard: self.turns.cut(turn, heard),
            lambda: self.turns.last,
            hearing=lambda: self.llms.user_active(),
        )
        self.memory = MemoryRelay(
            self.opening,
            broadcast,
            self.jobs.spawn,
            lambda event: self.turns.note(event),
            lambda: self.llm.text,
            lambda: bool(self.hub.clients),
        )
        self.vault = VaultRelay(
            settings,
            self.memory.changed,
            broadcast,
            self.jobs.from_thread,
            vault_timing or Timing(),
        )
        self.turns = Turns(
            self.opening,
            self.llm,
            self.voice,
            broadcast,
            self.jobs.from_thread,
            self.memory.broadcast_stats,
            self._stop_when_idle,
            self._stop.is_set,
        )
        self.drafts = Drafts(self.opening, self.llms, lambda: self.turns.busy, self.jobs.spawn)
        self.proactive = ProactiveRelay(
            settings,
            self.turns,
            self.voice,
            broadcast,
            self.jobs.from_thread,
            lambda: len(self.hub.clients),
        )
        self.config = ConfigWatch(loaded, reload, config_poll_s, broadcast, self.turns.switch)
        self.task_relay = TaskRelay(
            settings, broadcast, self.jobs.from_thread, self.turns.note, self.voice.say_aloud
        )
        self.approvals = self.task_relay.approvals()
        self.task_desk = TaskDesk(
            self.opening,
            self.approvals,
            lambda: self.llm.text,
            self.turns.work,
            lambda: self.task_relay.heartbeat,
            self.jobs.spawn,
            self.memory.broadcast_stats,
        )
        self._register()

    # Running

    async def serve(self) -> None:
        """Listen until stopped; raises AlreadyRunning if another service owns the folder."""
        self.jobs.bind(asyncio.get_running_loop())
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
            asyncio.create_task(self.turns.run()),
            asyncio.create_task(self.config.watch()),
            asyncio.create_task(self._stop_if_nobody_comes()),
            asyncio.create_task(self.memory.watch()),
        ]
        self._starting = asyncio.create_task(self._start())
        try:
            await self._stop.wait()
        finally:
            await self._shut_down(server, background)

    def stop(self, reason: str = "stopped") -> None:
        if not self._stop.is_set():
            log.info("stopping: %s", reason)
            self.hub.broadcast(Bye(reason=reason))
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
                self.hub.serve, path=str(self.socket), limit=MAX_LINE_BYTES
            )
        finally:
            os.umask(umask)
        self.socket.chmod(0o600)
        return server

    async def _shut_down(self, server: asyncio.Server, tasks: list[asyncio.Task[None]]) -> None:
        self.llm.state = "stopping"
        self.turns.cancel()
        self.voice.stop_speaking()
        server.close()
        self.hub.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
        await self.voice.close()
        await self.turns.saved()
        await self.task_relay.close()
        session = self.opening.session
        if session is not None:
            await session.tasks.close()
        await self.turns.save_queued()
        await self.vault.close()
        await asyncio.to_thread(close_session, session, self.llms)
        self._lock.release()
        unsettle_garbage()
        log.info("stopped")

    async def _start(self) -> None:
        session: Session | None = None
        try:
            session = await asyncio.to_thread(
                open_session,
                self.settings,
                self.llms,
                self.approvals,
                self.jobs.from_thread(self.turns.task_finished),
                self.task_relay.reminder_added,
                self.embedder,
                self.llms.on_progress,
            )
        except STARTUP_ERRORS as error:
            self.llm.no_memory(error)
            self.voice.settled.set()
            return
        finally:
            self.opening.opened(session)
        self.hub.broadcast(History(items=session.history(self.proactive.said_first())))
        self.memory.broadcast_stats()
        self.vault.start(session)
        self.proactive.start(session)
        self.task_relay.start(
            asyncio.get_running_loop(),
            session.tasks,
            session.reminders,
            self.approvals,
            session.after_turn,
            session.plan,
            self.proactive.look,
            session.clock,
        )
        self._voice_start = asyncio.create_task(self.voice.start())
        await self.llm.start(session)
        # Started (the clients already have the history): nearly all the service holds now
        # stays until it stops.
        settle_garbage()

    async def _stop_if_nobody_comes(self) -> None:
        await asyncio.sleep(self.first_client_timeout_s)
        if not self.hub.ever_connected:
            self._stop_when_idle()

    def _stop_when_idle(self) -> None:
        if not self.hub.stays_without(None)[0] and not self._stop.is_set():
            self.stop("the last client left and no work is pending")

    # Clients

    def _greet(self, client: Client) -> None:
        session = self.opening.session
        client.send(
            Welcome(
                pid=os.getpid(),
                state=self.llm.state,
                text=self.llm.text,
                endpoint=self.llms.describe_endpoint(),
                background=self.config.settings.service.background,
                history=session.history(self.proactive.said_first()) if session is not None else [],
                voice=self.voice.status,
                memory=self.memory.stats(),
                settings=settings_seen(self.config.settings),
            )
        )
        # A question a task waits on is put to a window that opens meanwhile.
        for task_id, question in self.approvals.pending():
            client.send(ApprovalAsked(approval=approval_row(task_id, question)))

    def _register(self) -> None:
        """Every request's handler: the conversation's here, the other domains' from their
        parts and desks."""
        add = self.requests.add
        add(Say, lambda client, request: self._accept(client.name, request, client.send))
        add(
            Draft,
            lambda client, request: self._draft(request.text, request.text.endswith(SENTENCE_ENDS)),
        )
        add(Cancel, self._cancel)
        self.voice.register(self.requests, self.jobs.spawn)
        add(Retry, lambda client, request: self.llm.retry(self.opening.session))
        add(Leave, self.hub.leave)
        add(Stop, lambda client, request: self.stop(f"stopped by {client.name}"))
        add(Hello, lambda client, request: client.send(ATTACHED_ALREADY))
        self.memory.register(self.requests)
        self.task_desk.register(self.requests)

    def _accept(
        self, name: str, say: Say, tell: Callable[[Wire], None], timings: Timings | None = None
    ) -> None:
        """A turn from a client or the microphone (a heartbeat's turn under way stops)."""
        self.proactive.heard(say.text)
        self.turns.accept(name, say, tell, timings)

    def _draft(self, text: str, speculate: bool) -> None:
        """Words being typed or spoken: a heartbeat's turn under way stops, and the draft is
        read ahead."""
        self.turns.user_active()
        self.llms.user_active()
        self.drafts.read(text, speculate)

    def _cancel(self, client: Client, request: Cancel) -> None:
        self.turns.cancel()
        self.voice.stop_speaking()


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
