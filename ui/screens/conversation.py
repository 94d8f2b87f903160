"""The conversation screen: a client of the assistant service. Type, read the reply as it
streams, see turns typed in other windows; closing it never stops the service's work."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from functools import partial
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Header, Input

from assistant.clients.connection import ServiceClient, ServiceError
from assistant.config import LoadedConfig
from assistant.model_paths import ProfileModels
from assistant.protocol import Update
from assistant.protocol.common import Notice, Wire
from assistant.protocol.conversation import (
    DRAFT_WORD_ENDS,
    MAX_SAY_CHARS,
    Bye,
    Cancel,
    Draft,
    History,
    HistoryItem,
    Leave,
    Left,
    Progress,
    ReplyChunk,
    ReplyCut,
    ReplyEnd,
    ReplyStart,
    Retry,
    Say,
    ServiceState,
    Status,
    UserSaid,
    Welcome,
)
from assistant.protocol.tasks import ApprovalAsked, ApprovalSettled, ReminderFired
from assistant.protocol.voice import HeardNothing, SetVoice, StopSpeaking, Talk, Voice, VoiceTimings
from ui.link import ServiceLink
from ui.screens.approval import Questions
from ui.screens.first_run import FirstRunScreen
from ui.widgets.chat import ChatLog, MessageView
from ui.widgets.memory_status import MemoryStatus
from ui.widgets.status import StartupStatus
from ui.widgets.voice import VoiceIndicator

LEAVE_TIMEOUT_S = 5.0
# A pause this long in typing sends the text so far as a draft, to be read ahead; so does
# each word finished (the service reads the newest draft whenever its model is free).
TYPING_PAUSE_S = 0.5

RETRY = Binding(
    "ctrl+r", "retry", "Retry LLM", tooltip="Start the LLM again, or reconnect to the service"
)
# Keys a terminal sends reliably that the prompt's Input does not use for editing.
STOP = Binding(
    "escape", "stop_reply", "Stop reply", tooltip="Stop the reply being written or spoken"
)
MUTE = Binding(
    "f5", "toggle_mute", "Mute/unmute", tooltip="Stop listening, or listen all the time again"
)
PUSH_TO_TALK = Binding(
    "f6",
    "toggle_push_to_talk",
    "Push-to-talk",
    tooltip="Listen only while you talk (Ctrl+T), or all the time again",
)
TALK = Binding(
    "ctrl+t",
    "talk",
    "Talk",
    tooltip="Push-to-talk: press once to start talking and again when you are done",
)
VOICE_ACTIONS = {MUTE.action, PUSH_TO_TALK.action, TALK.action}
KEYS = [RETRY, STOP, MUTE, PUSH_TO_TALK, TALK]
# The prompt's history: Up and Down bring back what was sent (the chat log, when focused,
# scrolls with them instead).
RECALL = [
    Binding("up", "recall(-1)", "Previous message", show=False),
    Binding("down", "recall(1)", "Next message", show=False),
]


class ConversationScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [*KEYS, *RECALL]

    def __init__(self, loaded: LoadedConfig, link: ServiceLink, questions: Questions) -> None:
        super().__init__()
        self.loaded = loaded
        self.link = link
        self.questions = questions
        self.client: ServiceClient | None = None
        self.state: ServiceState | None = None
        self.state_text = "connecting to the Brain OS service…"
        # Turns this window sent (their echo is not shown twice), and replies being written.
        self.mine: set[str] = set()
        self.replies: dict[int, MessageView] = {}
        self.voice = Voice(state="off", text="voice is off: not connected")
        # Push-to-talk: the talk key was pressed to start and not yet to stop.
        self.talking = False
        self._left: asyncio.Future[Left] | None = None
        # What the user sent, oldest first, and where Up/Down is in it (len: the new line).
        self.sent: list[str] = []
        self.recalled = 0
        self.draft = ""
        # Sends what is typed once the user pauses (Draft), so the turn can start sooner.
        self._pause: Timer | None = None
        self._drafted = ""  # the last draft sent
        # Shown while weights are assembled on a first run (None once hidden or done).
        self.first_run: FirstRunScreen | None = None

    @property
    def replying(self) -> bool:
        return bool(self.replies)

    @property
    def voice_up(self) -> bool:
        return self.client is not None and self.voice.state != "off"

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="status-bar"):
            yield StartupStatus(id="status")
            yield MemoryStatus(id="memory-count")
            yield VoiceIndicator(id="voice")
        yield ChatLog(id="chat")
        yield Input(placeholder="Type a message and press Enter", id="prompt")
        yield Footer()

    def on_mount(self) -> None:
        self.title = "Brain OS"
        self.sub_title = ProfileModels(self.loaded.settings).describe_llm()
        self.query_one(Input).focus()
        self.link.stats_changed.subscribe(self, self.query_one(MemoryStatus).show)
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
        self.client = self.link.client = client
        self._welcome(client.welcome)
        if client.other_settings is not None:
            self.notify(client.other_settings, severity="warning", timeout=20)
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
            self.client = self.link.client = None
            await client.close()

    def _welcome(self, welcome: Welcome) -> None:
        if welcome.memory is not None:
            self.link.take(welcome.memory)
        self._history(welcome.history)
        self._status(welcome.state, welcome.text, welcome.endpoint)
        self._voice(welcome.voice, changed=True)

    def _history(self, items: list[HistoryItem]) -> None:
        chat = self.query_one(ChatLog)
        for item in items:
            chat.add(item.role, item.text, "earlier", proactive=item.proactive)
        earlier = [item.text for item in items if item.role == "user"]
        self.sent = earlier + self.sent
        self.recalled = len(self.sent)

    def show(self, update: Update) -> None:
        if self.link.take(update):  # answers to the memory screen, memory news
            return
        chat = self.query_one(ChatLog)
        match update:
            case History():
                self._history(update.items)
            case Status():
                self._status(update.state, update.text, update.endpoint)
            case Progress():
                self.query_one(StartupStatus).progress(update.label, update.done, update.total)
                self._first_run(update)
            case UserSaid() if update.ref not in self.mine:
                chat.add("user", update.text, said_note(update))
                self._remember_sent(update.text)
            case ReplyStart():
                self.replies[update.turn] = chat.add(
                    "assistant", turn=update.turn, proactive=update.proactive
                )
            case ReplyChunk() if update.turn in self.replies:
                self.replies[update.turn].append(update.text)
                chat.scroll_end(animate=False)
            case ReplyEnd() if update.turn in self.replies:
                self._finish(self.replies.pop(update.turn), update)
            case ReplyCut():
                # Speech lags the text, so the reply is often written in full by now.
                if view := self.replies.get(update.turn) or chat.reply(update.turn):
                    view.cut(update.heard)
            case VoiceTimings():
                if view := self.replies.get(update.turn) or chat.reply(update.turn):
                    view.show_timings(update.stages_ms)
            case HeardNothing():
                chat.add("aside", f"🎤 not heard: {update.reason}")
            case ReminderFired():
                chat.add("aside", f"⏰ {update.announcement}")
                self.notify(update.announcement, title="Reminder", timeout=30)
            case ApprovalAsked():
                approval = update.approval
                if approval.id not in self.questions.showing:
                    chat.add("aside", f"🔐 task {approval.task_id} asks to run {approval.tool}")
                self.questions.ask(approval)
            case ApprovalSettled():
                said = {True: "allowed", False: "refused", None: "withdrawn"}[update.allowed]
                chat.add("aside", f"🔐 {update.tool} for task {update.task_id}: {said}")
                self.questions.settled(update.id)
            case Voice():
                self._voice(update)
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
        elif end.interrupted and view.heard is None:
            view.append(" [stopped]")

    def _first_run(self, progress: Progress) -> None:
        if progress.action == "assembling" and self.first_run is None and self.is_current:
            self.first_run = FirstRunScreen()
            self.app.push_screen(self.first_run, self._first_run_hidden)
        if self.first_run is not None:
            self.first_run.progress(progress.label, progress.done, progress.total)

    def _first_run_hidden(self, _: None) -> None:
        self.first_run = None

    def _status(self, state: ServiceState, text: str, endpoint: str) -> None:
        if state != "starting" and self.first_run is not None:
            self.first_run.dismiss(None)  # the models are assembled (or failed: said below)
        self.state, self.state_text = state, text
        if endpoint:
            self.sub_title = endpoint
        shown = {"ready": "ready", "failed": "error"}.get(state, "info")
        suffix = " (Ctrl+R retries)" if state == "failed" else ""
        self.query_one(StartupStatus).show(text + suffix, shown)

    def _lost(self, reason: str) -> None:
        self.link.lost(reason)
        self.state, self.state_text = None, reason
        for view in self.replies.values():
            view.append(" [cut off]")
        self.replies.clear()
        self.query_one(StartupStatus).show(f"{reason} (Ctrl+R reconnects)", "error")
        self._voice(Voice(state="off", text="voice is off: not connected"), changed=True)

    def _voice(self, voice: Voice, changed: bool = False) -> None:
        """About ten of these a second carry only a new level: those touch the meter alone."""
        indicator = self.query_one(VoiceIndicator)
        indicator.level(voice.level_dbfs)
        before, self.voice = self.voice, voice
        if voice.mode != "push_to_talk" or voice.state == "off":
            self.talking = False
        if changed or shown(voice) != shown(before):
            indicator.show(voice, self._voice_hint())
            self.refresh_bindings()

    def _voice_hint(self) -> str:
        """The key that does the obvious next thing in this state."""
        key = self.app.get_key_display
        match self.voice.state:
            case "speaking":
                return f"{key(STOP)} stops"
            case "muted":
                return f"{key(MUTE)} unmutes"
            case "push_to_talk" if not self.talking:
                return f"{key(TALK)} to talk"
            case "hearing" if self.talking:
                return f"{key(TALK)} when done"
        return ""

    # Actions

    @on(Input.Changed, "#prompt")
    def typing(self, event: Input.Changed) -> None:
        """A finished word or a pause in typing sends the text so far as a draft (read
        ahead by the service)."""
        if self._pause is not None:
            self._pause.stop()
        text = event.value.strip()
        if not text or self.client is None or self.state != "ready":
            return
        if event.value.endswith(DRAFT_WORD_ENDS):
            self.run_worker(self._send_draft(text), group="drafts")
        else:
            self._pause = self.set_timer(TYPING_PAUSE_S, partial(self._send_draft, text))

    async def _send_draft(self, text: str) -> None:
        if self.query_one("#prompt", Input).value.strip() == text and text != self._drafted:
            self._drafted = text
            await self._send(Draft(text=text))

    @on(Input.Submitted, "#prompt")
    async def submit(self, event: Input.Submitted) -> None:
        if self._pause is not None:
            self._pause.stop()
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
            self._remember_sent(text)
            self.query_one(ChatLog).add("user", text)
            if self.state == "starting":
                self.query_one(StartupStatus).show(f"{self.state_text}; your message will follow")

    def _remember_sent(self, text: str) -> None:
        at_end = self.recalled == len(self.sent)
        self.sent.append(text)
        if at_end:
            self.recalled = len(self.sent)

    def action_recall(self, step: int) -> None:
        prompt = self.query_one("#prompt", Input)
        if not prompt.has_focus:
            return
        if self.recalled == len(self.sent):
            self.draft = prompt.value  # what was being typed comes back at the end
        self.recalled = min(max(0, self.recalled + step), len(self.sent))
        prompt.value = self.sent[self.recalled] if self.recalled < len(self.sent) else self.draft
        prompt.cursor_position = len(prompt.value)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Voice keys show greyed out in the footer while they would do nothing."""
        if action == TALK.action:
            return True if self.voice_up and self.voice.mode == "push_to_talk" else None
        if action in VOICE_ACTIONS:
            return True if self.voice_up else None
        return True

    def commands(self) -> Iterator[SystemCommand]:
        """This screen's keys for the command palette, those that would do something now."""
        for binding in KEYS:
            if self.check_action(binding.action, ()):
                voice = "Voice: " if binding.action in VOICE_ACTIONS else ""
                yield SystemCommand(
                    f"{voice}{binding.description}",
                    f"{binding.tooltip} ({self.app.get_key_display(binding)})",
                    partial(self.run_action, binding.action),
                )

    async def action_stop_reply(self) -> None:
        if self.replying:
            # The service stops the speech along with the writing.
            await self._send(Cancel())
        elif self.voice.state == "speaking":
            await self._send(StopSpeaking())

    async def action_toggle_mute(self) -> None:
        await self._send(SetVoice(mode="always" if self.voice.mode == "muted" else "muted"))

    async def action_toggle_push_to_talk(self) -> None:
        push = self.voice.mode != "push_to_talk"
        await self._send(SetVoice(mode="push_to_talk" if push else "always"))

    async def action_talk(self) -> None:
        if self.voice.mode != "push_to_talk":
            self.notify(
                f"Talk works in push-to-talk mode; {self.app.get_key_display(PUSH_TO_TALK)} "
                "turns it on.",
                severity="warning",
            )
            return
        if await self._send(Talk(down=not self.talking)):
            self.talking = not self.talking
            self.query_one(VoiceIndicator).show(self.voice, self._voice_hint())

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


def said_note(said: UserSaid) -> str:
    """How a turn from elsewhere came: spoken (with the recogniser's confidence) or typed."""
    if said.confidence is None:
        return f"typed in {said.client}"
    spoken = f"🎤 {said.confidence:.0%}"
    # The service's own speech loop is "voice"; any other client says where it was spoken.
    return spoken if said.client == "voice" else f"{spoken} in {said.client}"


def shown(voice: Voice) -> tuple[str, str, str]:
    """What the status bar says of the voice, the level aside."""
    return voice.state, voice.mode, voice.text
