"""The conversation screen: type, read the reply as it streams, see what the model is doing."""

from __future__ import annotations

import threading
from collections import deque

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Header, Input

from assistant.agent.agent import Agent
from assistant.agent.core_memory import CoreMemoryError
from assistant.agent.events import UserText
from assistant.agent.session import open_agent, open_stores
from assistant.agent.tools import Stores
from assistant.llm.client import LLMError
from assistant.llm.priority import BackgroundLLM, ForegroundGate
from assistant.llm.runtime import LLMRuntime
from assistant.llm.server import LLMServerError, ServerStatus
from assistant.parts import load_embedder
from memory.database import DatabaseError
from models import ModelError, Progress
from ui.messages import (
    ChatReady,
    ModelProgress,
    ReplyChunk,
    ReplyFailed,
    ReplyFinished,
    ServerStatusChanged,
    StartupFailed,
)
from ui.widgets.chat import ChatLog, MessageView
from ui.widgets.status import StartupStatus

MAX_MESSAGE_CHARS = 8_000


class ConversationScreen(Screen[None]):
    BINDINGS = [
        Binding("ctrl+r", "retry_llm", "Retry LLM"),
        Binding("escape", "stop_reply", "Stop reply"),
    ]

    def __init__(self, runtime: LLMRuntime) -> None:
        super().__init__()
        self.runtime = runtime
        self.agent: Agent | None = None
        self.stores: Stores | None = None
        self.pending: deque[str] = deque()
        self._cancel = threading.Event()
        # Replies hold it; importance ratings wait for it.
        self.gate = ForegroundGate()
        self.startup_error: str | None = None
        self.replying = False
        self._reply_view: MessageView | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield StartupStatus(id="status")
        yield ChatLog(id="chat")
        yield Input(placeholder="Type a message and press Enter", id="prompt")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "Brain OS"
        self.sub_title = self.runtime.describe()
        self.query_one(Input).focus()
        self.start_llm()

    @work(thread=True, exclusive=True, group="startup")
    def start_llm(self) -> None:
        def on_progress(progress: Progress) -> None:
            label = f"{progress.action} {progress.weight_id} ({progress.file_name})"
            self.post_message(ModelProgress(label, progress.done, progress.total))

        def on_status(status: ServerStatus) -> None:
            self.post_message(ServerStatusChanged(status.state.value, status.message))

        self.runtime.models.progress = on_progress
        self.runtime.on_status = on_status
        try:
            client = self.runtime.start()
        except (ModelError, LLMServerError, LLMError) as error:
            self.runtime.stop()
            self.post_message(StartupFailed(str(error)))
            return
        settings = self.runtime.settings
        try:
            if self.stores is None:
                self.post_message(ServerStatusChanged("starting", "opening the memory…"))
                embedder = load_embedder(settings, self.runtime.models.embedder())
                self.stores = open_stores(
                    settings.data_dir,
                    embedder,
                    BackgroundLLM(client, self.gate),
                    settings.agent.core_memory_chars,
                )
            agent = open_agent(settings, client, self.stores, self.gate)
        except (ModelError, DatabaseError, CoreMemoryError, OSError) as error:
            self.runtime.stop()
            self.post_message(StartupFailed(str(error)))
            return
        warning = None
        try:
            # Prefill the stable prompt prefix now, so the first real turn reuses the KV cache.
            client.complete(
                [agent.context.prefix(), {"role": "user", "content": "hi"}], max_tokens=1
            )
        except LLMError as error:
            warning = str(error)
        self.post_message(ChatReady(agent, warning))

    def on_model_progress(self, message: ModelProgress) -> None:
        self.query_one(StartupStatus).progress(message.label, message.done, message.total)

    def on_server_status_changed(self, message: ServerStatusChanged) -> None:
        state = "error" if message.state == "failed" else "info"
        self.query_one(StartupStatus).show(message.text, state)

    def on_chat_ready(self, message: ChatReady) -> None:
        self.agent = message.agent
        self.startup_error = None
        label = self.runtime.client.endpoint.label if self.runtime.client else ""
        self.sub_title = label
        status = self.query_one(StartupStatus)
        if message.warning:
            status.show(f"connected, but the first request failed: {message.warning}", "error")
        else:
            status.show(f"ready: {label}", "ready")
        self._send_next()

    def on_startup_failed(self, message: StartupFailed) -> None:
        self.startup_error = message.text
        self.query_one(StartupStatus).show(
            f"LLM unavailable: {message.text} (Ctrl+R retries)", "error"
        )
        while self.pending:
            self.query_one(ChatLog).add("notice", f"Not sent: {self.pending.popleft()!r}")

    def action_retry_llm(self) -> None:
        if self.agent is None:
            self.startup_error = None
            self.query_one(StartupStatus).show("retrying…")
            self.start_llm()

    @on(Input.Submitted, "#prompt")
    def submit(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        if len(text) > MAX_MESSAGE_CHARS:
            self.notify(
                f"That message is {len(text):,} characters; the limit is {MAX_MESSAGE_CHARS:,}. "
                "It is still in the input box.",
                severity="warning",
            )
            return
        if self.startup_error is not None:
            self.notify(
                f"Not sent, the LLM is unavailable: {self.startup_error}. "
                "Your text is still in the input box; Ctrl+R retries.",
                severity="error",
            )
            return
        event.input.clear()
        self.query_one(ChatLog).add("user", text)
        self.pending.append(text)
        if self.agent is None:
            self.query_one(StartupStatus).show(
                "the model is still starting; your message will follow"
            )
        self._send_next()

    def action_stop_reply(self) -> None:
        if self.replying:
            self._cancel.set()

    def _send_next(self) -> None:
        if self.replying or self.agent is None or not self.pending:
            return
        text = self.pending.popleft()
        self.replying = True
        self._cancel.clear()
        self._reply_view = self.query_one(ChatLog).add("assistant")
        self.reply(self.agent, text)

    @work(thread=True, group="reply")
    def reply(self, agent: Agent, text: str) -> None:
        def show(piece: str) -> None:
            self.post_message(ReplyChunk(piece))

        turn = agent.respond(UserText(text), on_text=show, cancel=self._cancel)
        if turn.error and not turn.reply:
            self.post_message(ReplyFailed(turn.error))
        else:
            self.post_message(ReplyFinished(turn.reply, turn.interrupted))

    def on_reply_chunk(self, message: ReplyChunk) -> None:
        if self._reply_view is not None:
            self._reply_view.append(message.text)
            self.query_one(ChatLog).scroll_end(animate=False)

    def on_reply_finished(self, message: ReplyFinished) -> None:
        if message.interrupted and self._reply_view is not None:
            self._reply_view.append(" [stopped]")
        self._finish_reply()

    def on_reply_failed(self, message: ReplyFailed) -> None:
        if self._reply_view is not None:
            self._reply_view.remove()
        # The message itself is kept in the conversation history (recall storage).
        self.query_one(ChatLog).add("notice", f"No reply: {message.text}")
        self._finish_reply()

    def on_unmount(self) -> None:
        if self.stores is not None:
            self.stores.stream.close()

    def _finish_reply(self) -> None:
        self.replying = False
        self._reply_view = None
        self._send_next()
