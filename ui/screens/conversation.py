"""The conversation screen: a client of the assistant service. Type, read the reply as it
streams, see turns typed in other windows; closing it never stops the service's work."""

from __future__ import annotations

import asyncio
import uuid

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Header, Input

from assistant.config import LoadedConfig
from assistant.llm.runtime import LLMRuntime
from assistant.service.client import ServiceClient, ServiceError
from assistant.service.protocol import (
    MAX_SAY_CHARS,
    Bye,
    Cancel,
    History,
    HistoryItem,
    Leave,
    Left,
    Notice,
    Progress,
    ReplyChunk,
    ReplyEnd,
    ReplyStart,
    Retry,
    Say,
    ServiceState,
    Status,
    Update,
    UserSaid,
    Welcome,
    Wire,
)
from ui.widgets.chat import ChatLog, MessageView
from ui.widgets.status import StartupStatus

LEAVE_TIMEOUT_S = 5.0


class ConversationScreen(Screen[None]):
    BINDINGS = [
        Binding("ctrl+r", "retry", "Retry LLM"),
        Binding("escape", "stop_reply", "Stop reply"),
    ]

    def __init__(self, loaded: LoadedConfig) -> None:
        super().__init__()
        self.loaded = loaded
        self.client: ServiceClient | None = None
        self.state: ServiceState | None = None
        self.state_text = "connecting to the Brain OS service…"
        # Turns this window sent (their echo is not shown twice), and replies being written.
        self.mine: set[str] = set()
        self.replies: dict[int, MessageView] = {}
        self._left: asyncio.Future[Left] | None = None

    @property
    def replying(self) -> bool:
        return bool(self.replies)

    def compose(self) -> ComposeResult:
        yield Header()
        yield StartupStatus(id="status")
        yield ChatLog(id="chat")
        yield Input(placeholder="Type a message and press Enter", id="prompt")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "Brain OS"
        self.sub_title = LLMRuntime(self.loaded.settings).describe()
        self.query_one(Input).focus()
        self.attach()

    # The service

    @work(exclusive=True, group="service")
    async def attach(self) -> None:
        self.query_one(StartupStatus).show(self.state_text)
        try:
            client = await ServiceClient.connect(self.loaded, "tui")
        except ServiceError as error:
            self._lost(str(error))
            return
        self.client = client
        self._welcome(client.welcome)
        reason = "the service closed the connection"
        try:
            async for update in client.updates():
                self.show(update)
        except ServiceError as error:
            reason = str(error)
        if self.client is client:
            self.client = None
            self._lost(reason)

    async def leave(self) -> Left | None:
        """Detach; the answer says whether the service keeps running (and why)."""
        client = self.client
        if client is None:
            return None
        self._left = asyncio.get_running_loop().create_future()
        try:
            await client.send(Leave())
            return await asyncio.wait_for(self._left, LEAVE_TIMEOUT_S)
        except (ServiceError, TimeoutError):
            return None
        finally:
            self.client = None
            await client.close()

    def _welcome(self, welcome: Welcome) -> None:
        self._history(welcome.history)
        self._status(welcome.state, welcome.text, welcome.endpoint)

    def _history(self, items: list[HistoryItem]) -> None:
        chat = self.query_one(ChatLog)
        for item in items:
            chat.add(item.role, item.text, "earlier")

    def show(self, update: Update) -> None:
        chat = self.query_one(ChatLog)
        match update:
            case History():
                self._history(update.items)
            case Status():
                self._status(update.state, update.text, update.endpoint)
            case Progress():
                self.query_one(StartupStatus).progress(update.label, update.done, update.total)
            case UserSaid() if update.ref not in self.mine:
                how = "spoken" if update.confidence is not None else "typed"
                chat.add("user", update.text, f"{how} in {update.client}")
            case ReplyStart():
                self.replies[update.turn] = chat.add("assistant")
            case ReplyChunk() if update.turn in self.replies:
                self.replies[update.turn].append(update.text)
                chat.scroll_end(animate=False)
            case ReplyEnd() if update.turn in self.replies:
                self._finish(self.replies.pop(update.turn), update)
            case Notice():
                severity = "information" if update.level == "info" else update.level
                self.notify(update.text, severity=severity)
            case Bye():
                self._lost(f"the service stopped: {update.reason}")
            case Left() if self._left is not None and not self._left.done():
                self._left.set_result(update)

    def _finish(self, view: MessageView, end: ReplyEnd) -> None:
        if end.error and not end.text:
            view.remove()
            # The message itself is kept in the conversation history (recall storage).
            self.query_one(ChatLog).add("notice", f"No reply: {end.error}")
        elif end.interrupted:
            view.append(" [stopped]")

    def _status(self, state: ServiceState, text: str, endpoint: str) -> None:
        self.state, self.state_text = state, text
        if endpoint:
            self.sub_title = endpoint
        shown = {"ready": "ready", "failed": "error"}.get(state, "info")
        suffix = " (Ctrl+R retries)" if state == "failed" else ""
        self.query_one(StartupStatus).show(text + suffix, shown)

    def _lost(self, reason: str) -> None:
        self.state, self.state_text = None, reason
        for view in self.replies.values():
            view.append(" [cut off]")
        self.replies.clear()
        self.query_one(StartupStatus).show(f"{reason} (Ctrl+R reconnects)", "error")

    # Actions

    @on(Input.Submitted, "#prompt")
    async def submit(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        if len(text) > MAX_SAY_CHARS:
            self.notify(
                f"That message is {len(text):,} characters; the limit is {MAX_SAY_CHARS:,}. "
                "It is still in the input box.",
                severity="warning",
            )
            return
        if self.client is None or self.state == "failed":
            self.notify(
                f"Not sent: {self.state_text}. Your text is still in the input box; "
                "Ctrl+R retries.",
                severity="error",
            )
            return
        ref = uuid.uuid4().hex
        self.mine.add(ref)
        if await self._send(Say(text=text, ref=ref)):
            event.input.clear()
            self.query_one(ChatLog).add("user", text)
            if self.state == "starting":
                self.query_one(StartupStatus).show(f"{self.state_text}; your message will follow")

    async def action_stop_reply(self) -> None:
        if self.replying:
            await self._send(Cancel())

    async def action_retry(self) -> None:
        if self.client is None:
            self.attach()
        elif self.state == "failed":
            await self._send(Retry())

    async def _send(self, message: Wire) -> bool:
        if self.client is None:
            return False
        try:
            await self.client.send(message)
        except ServiceError as error:
            self.notify(f"Not sent: {error}", severity="error")
            return False
        return True
