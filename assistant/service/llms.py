"""The LLMs the service runs: the conversation's (the configured endpoint or a local server)
and background work's, with the endpoint swappable while it runs.

Blocking calls, for worker threads: the service's event loop never waits on a model.
"""

from __future__ import annotations

import logging
import threading

from assistant.agent.core_memory import CoreMemoryError
from assistant.llm.client import LLMError
from assistant.llm.pausing import BackgroundPause
from assistant.llm.priority import BackgroundLLM, ForegroundGate
from assistant.llm.runtime import LLMRuntime
from assistant.llm.server import LLMServerError, ServerStatus, StatusCallback
from assistant.llm.switch import SwitchableLLM
from assistant.model_paths import ProfileModels
from assistant.settings import Settings
from memory.database import DatabaseError
from models import ModelError, ProgressCallback

log = logging.getLogger(__name__)

STARTUP_ERRORS = (
    ModelError,
    LLMServerError,
    LLMError,
    DatabaseError,
    CoreMemoryError,
    OSError,
)


class LLMs:
    def __init__(
        self,
        settings: Settings,
        on_progress: ProgressCallback | None = None,
        on_status: StatusCallback | None = None,
    ) -> None:
        self.settings = settings
        self.on_progress = on_progress
        self.on_status = on_status
        self.llm = SwitchableLLM()
        # Background work's LLM: the runtime's background server (waited for while it
        # starts); for remote endpoints, the conversation's client.
        self.background = SwitchableLLM()
        self.gate = ForegroundGate()
        self.runtime: LLMRuntime | None = None
        self._switching = threading.Lock()
        self.pause: BackgroundPause | None = None
        if settings.llm.pause_background:
            self.pause = BackgroundPause(
                self._pause_background, urgent=lambda: self.gate.urgent_work
            )
            self.gate.listen(self.pause.foreground)

    def user_active(self) -> None:
        """The user is speaking or typing: the background server waits (``BackgroundPause``)."""
        if self.pause is not None:
            self.pause.user_active()

    def _pause_background(self, paused: bool) -> None:
        runtime = self.runtime
        server = runtime.background_server if runtime is not None else None
        if server is not None:
            server.pause(paused)

    def for_background(self) -> BackgroundLLM:
        """Background work's LLM, giving way to the conversation."""
        return BackgroundLLM(self.background, self.gate)

    def for_compaction(self) -> BackgroundLLM:
        """The LLM that writes a compaction's summary, told whether it runs apart; its
        requests go before other background work."""
        return BackgroundLLM(self.background, self.gate, self._background_apart, urgent=True)

    @property
    def local(self) -> bool:
        """The conversation's LLM is a local server (reading ahead costs nothing)."""
        return self.runtime is not None and self.runtime.server is not None

    def start(self, settings: Settings | None = None) -> None:
        """Start (or switch to) the LLM of ``settings``. Raises one of STARTUP_ERRORS,
        leaving any running LLM in use."""
        with self._switching:
            settings = settings or self.settings
            runtime = LLMRuntime(settings, ProfileModels(settings, self.on_progress), self._status)
            try:
                client = runtime.start()
            except BaseException:
                runtime.stop()
                raise
            old_runtime, self.runtime = self.runtime, runtime
            self.settings = settings
            self.llm.use(client)
            if runtime.server is None:
                self.background.use(client)
            else:
                # Background work waits for its own server (start_background) rather than
                # take this one's: measured, a day plan written on it while the other
                # started made the next turn read its whole prompt again (17 s).
                self.background.coming(
                    "the background LLM server is starting", settings.llm.startup_timeout_s
                )
            if old_runtime is not None:
                old_runtime.stop()

    def start_background(self) -> None:
        """Give background work its own server (after the conversation's is up and warm, so
        the two do not start at once on a small machine)."""
        with self._switching:
            if self.runtime is None:
                return
            try:
                self.background.use(self.runtime.start_background())
            except STARTUP_ERRORS as error:
                log.warning(
                    "no background LLM server (%s); background work shares the main one", error
                )
                if self.runtime.client is not None:
                    self.background.use(self.runtime.client)

    def _background_apart(self) -> bool:
        """Background work has a server of its own (at idle priority, or another endpoint's),
        so it cannot slow a reply."""
        client = self.background.client
        return client is not None and client is not self.llm.client

    def failed(self, reason: str) -> None:
        for llm in (self.llm, self.background):
            llm.unavailable(f"the LLM is unavailable: {reason}")

    def describe_endpoint(self) -> str:
        client = self.llm.client
        if client is not None:
            return client.endpoint.label
        return ProfileModels(self.settings).describe_llm()

    def close(self) -> None:
        """Stop the LLM servers (``close_session`` first lets go of background work)."""
        if self.pause is not None:
            self.pause.close()
        if self.runtime is not None:
            self.runtime.close()

    def _status(self, status: ServerStatus) -> None:
        if self.on_status is not None:
            self.on_status(status)
