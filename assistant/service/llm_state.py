"""The service's state as clients see it (starting, ready, failed, stopping), which is mostly
the LLM's: starting it, switching to a new endpoint between turns, retrying after a failure,
and background work's own server once the conversation's is up."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from assistant.llm.server import ServerState, ServerStatus
from assistant.protocol.common import Notice, Wire
from assistant.protocol.conversation import Progress, ServiceState, Status
from assistant.service.llms import STARTUP_ERRORS, LLMs
from assistant.service.session import Session, start_llm
from assistant.settings import Settings
from models import Progress as WeightProgress


class LLMState:
    def __init__(self, llms: LLMs, broadcast: Callable[[Wire], None]) -> None:
        self.llms = llms
        self.broadcast = broadcast
        self.state: ServiceState = "starting"
        self.text = "starting"
        # Set while no LLM start is under way: turns wait for the outcome rather than
        # spending their retries on a server that is still loading.
        self.settled = asyncio.Event()
        self.switching = False
        self._starting: asyncio.Task[None] | None = None
        self._background_start: asyncio.Task[None] | None = None

    def set(self, state: ServiceState, text: str) -> None:
        self.state, self.text = state, text
        self.broadcast(Status(state=state, text=text, endpoint=self.llms.describe_endpoint()))

    def no_memory(self, error: Exception) -> None:
        """The memory could not be opened: nothing starts, turns are refused."""
        self.set("failed", f"the memory could not be opened: {error}")
        self.settled.set()

    async def start(self, session: Session) -> None:
        self.settled.clear()
        self.set("starting", f"starting {self.llms.describe_endpoint()}")
        try:
            warning = await asyncio.to_thread(start_llm, self.llms, session.agent)
        except STARTUP_ERRORS as error:
            self.llms.failed(str(error))
            self.set("failed", f"LLM unavailable: {error}")
            return
        finally:
            self.settled.set()
        self.set("ready", f"ready: {self.llms.describe_endpoint()}")
        if warning:
            self.broadcast(
                Notice(text=f"connected, but the first request failed: {warning}", level="warning")
            )
        self._start_background(session)

    def retry(self, session: Session | None) -> None:
        """Start the LLM again after it failed."""
        if self.state == "failed" and session is not None:
            self._starting = asyncio.create_task(self.start(session))

    async def switch(self, session: Session, settings: Settings) -> None:
        self.switching = True
        before = self.llms.describe_endpoint()
        self.set("starting", f"switching the LLM from {before}")
        try:
            warning = await asyncio.to_thread(start_llm, self.llms, session.agent, settings)
        except STARTUP_ERRORS as error:
            if self.llms.llm.client is not None:
                self.set("ready", f"ready: {before}")
                self.broadcast(
                    Notice(
                        text=f"could not switch the LLM ({error}); still using {before}",
                        level="error",
                    )
                )
            else:
                self.llms.failed(str(error))
                self.set("failed", f"LLM unavailable: {error}")
            return
        finally:
            self.switching = False
        self.set("ready", f"ready: {self.llms.describe_endpoint()}")
        self.broadcast(Notice(text=f"the LLM is now {self.llms.describe_endpoint()}"))
        if warning:
            self.broadcast(Notice(text=f"the first request failed: {warning}", level="warning"))
        self._start_background(session)

    def _start_background(self, session: Session) -> None:
        """Background work's own LLM server starts after the reply path is ready; turns do
        not wait for it."""
        self._background_start = asyncio.create_task(
            asyncio.to_thread(self._background_up, session)
        )
        # The heartbeat's first tick came before an LLM was up: the day plan is due now.
        self._background_start.add_done_callback(lambda _: session.plan())

    def _background_up(self, session: Session) -> None:
        self.llms.start_background()
        session.learn(self.llms)

    def on_progress(self, value: object) -> None:
        if isinstance(value, WeightProgress):
            self.broadcast(
                Progress(
                    label=f"{value.action} {value.weight_id} ({value.file_name})",
                    done=value.done,
                    total=value.total,
                    action=value.action,
                )
            )

    def on_status(self, value: object) -> None:
        if isinstance(value, ServerStatus) and value.state != ServerState.READY:
            state: ServiceState = "failed" if value.state == ServerState.FAILED else "starting"
            self.set(state, value.message)
