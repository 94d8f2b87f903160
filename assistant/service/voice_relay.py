"""Voice between the loop and the clients: the voice loop's events go to every client (and
what it heard becomes a turn), the clients' voice requests go to the loop, and replies and
notices are spoken."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from assistant.agent.turn import ACKNOWLEDGED
from assistant.protocol.common import Notice, Wire
from assistant.protocol.conversation import ReplyCut, Say
from assistant.protocol.voice import (
    HeardNothing,
    Listen,
    SetVoice,
    StopSpeaking,
    Talk,
    Voice,
    VoiceTimings,
)
from assistant.service.hub import Client
from assistant.service.requests import Requests
from assistant.service.voice import VoiceBridge, VoiceRequestError
from assistant.settings import Settings
from voice.loop import (
    BargedIn,
    FirstAudio,
    Heard,
    HeardSoFar,
    LevelChanged,
    NotHeard,
    StateChanged,
    VoiceLoop,
)
from voice.speech_out import ReplySpeech
from voice.timing import Timings

log = logging.getLogger(__name__)


class VoiceRelay:
    def __init__(
        self,
        settings: Settings,
        bridge: VoiceBridge | None,
        broadcast: Callable[[Wire], None],
        accept: Callable[[str, Say, Callable[[Wire], None], Timings | None], None],
        read_draft: Callable[[str, bool], None],
        cut: Callable[[int, str], None],
        last_turn: Callable[[], int],
        hearing: Callable[[], None] = lambda: None,
    ) -> None:
        """``accept`` queues what was heard as a turn, ``read_draft`` reads words heard so
        far ahead, ``cut`` is told which turn's spoken reply the user cut off and what they
        heard of it, ``last_turn`` is the newest turn's number, ``hearing`` that the user
        began to speak."""
        self.settings = settings
        self.bridge = bridge
        self.broadcast = broadcast
        self.accept = accept
        self.read_draft = read_draft
        self.on_cut = cut
        self.last_turn = last_turn
        self.hearing = hearing
        self.status = Voice(state="off", mode=settings.voice.mode, text="voice is off")
        if bridge is not None:
            self.status = Voice(state="starting", mode=settings.voice.mode)
        # Set once voice started or failed to: requests made while the models load wait.
        self.settled = asyncio.Event()
        # The turn whose reply is being spoken, and its speech.
        self.speaking: tuple[int, ReplySpeech] | None = None
        # When the microphone last heard the user (time.monotonic()), for whether they are
        # there.
        self.last_heard: float | None = None

    @property
    def loop(self) -> VoiceLoop | None:
        return self.bridge.loop if self.bridge is not None else None

    def register(
        self, requests: Requests, spawn: Callable[[Coroutine[Any, Any, None]], None]
    ) -> None:
        def request(client: Client, request: SetVoice | Talk | StopSpeaking | Listen) -> None:
            spawn(self._request(client, request))

        requests.add(SetVoice, request)
        requests.add(Talk, request)
        requests.add(StopSpeaking, request)
        requests.add(Listen, request)

    async def start(self) -> None:
        bridge = self.bridge
        if bridge is None:
            self.settled.set()
            return
        try:
            text = await asyncio.to_thread(bridge.start)
        except Exception as error:  # a voice that cannot start leaves the text path working
            log.exception("voice did not start")
            self._set(state="off", text=f"voice is off: {error}")
            self.broadcast(
                Notice(text=f"voice is off: {error}; continuing by text", level="warning")
            )
            return
        finally:
            self.settled.set()
        self._set(text=text)
        if bridge.headless:
            self.broadcast(Notice(text=f"voice: {text}", level="warning"))

    def speak(self, turn: int, timings: Timings | None, unsaid: bool) -> ReplySpeech | None:
        """The speech a reply goes out as, when voice runs and this reply is to be heard
        (``unsaid``: a turn no one said, as when a task finished)."""
        loop = self.loop
        wanted = self.settings.voice.speak_replies
        # A turn no one said (a task finished) is spoken whenever voice is on: the user may
        # be away from the screen.
        heard = timings is not None or unsaid
        if loop is None or wanted == "never" or (wanted == "spoken" and not heard):
            return None
        speech = loop.speak(timings, filler=ACKNOWLEDGED)
        self.speaking = (turn, speech)
        return speech

    def thinking(self, busy: bool) -> None:
        if self.loop is not None:
            self.loop.thinking(busy)

    def stop_speaking(self) -> None:
        if self.loop is not None:
            heard = self.loop.stop_speaking()
            if heard is not None:
                self._cut(heard)

    def say_aloud(self, text: str) -> None:
        """Speak a notice when voice is on and no reply is being spoken (the user may be
        away from the screen)."""
        loop = self.loop
        if (
            loop is not None
            and self.speaking is None
            and self.settings.voice.speak_replies != "never"
        ):
            speech = loop.speak()
            speech.feed(text)
            speech.finish()

    def on_event(self, event: object) -> None:
        match event:
            case StateChanged():
                if event.state == "hearing":
                    self.hearing()
                self._set(state=event.state)
            case LevelChanged():
                self._set(level_dbfs=event.dbfs)
            case Heard():
                self.last_heard = time.monotonic()
                said = Say(text=event.transcript.text, confidence=event.transcript.confidence)
                self.accept("voice", said, self.broadcast, event.timings)
            case HeardSoFar():
                self.last_heard = time.monotonic()
                # Words heard while the user speaks are read ahead like a typed draft; at a
                # pause they are likely the turn, and its reply is asked for while the
                # end-of-turn silence runs out.
                self.read_draft(event.text, event.paused)
            case NotHeard():
                log.info("not heard: %s", event.reason)
                self.broadcast(HeardNothing(reason=event.reason))
            case BargedIn():
                log.info("barge-in: playback stopped in %.1f ms", event.stop_ms)
                self._cut(event.heard)
            case FirstAudio():
                stages = event.timings.since_end_of_speech_ms()
                turn = self.speaking[0] if self.speaking is not None else self.last_turn()
                log.info("voice turn %d: %s", turn, stages)
                self.broadcast(VoiceTimings(turn=turn, stages_ms=stages))

    async def close(self) -> None:
        # A start still under way finishes in its thread; close waits for nothing else.
        if self.bridge is not None:
            await asyncio.to_thread(self.bridge.close)

    def _cut(self, heard: str) -> None:
        """The reply being spoken stopped after ``heard``: stop writing it, and let the
        agent's history keep only what was heard (after the turn, in queue order)."""
        if self.speaking is None:
            return
        turn, _ = self.speaking
        self.speaking = None
        self.on_cut(turn, heard)
        self.broadcast(ReplyCut(turn=turn, heard=heard))

    async def _request(
        self, client: Client, request: SetVoice | Talk | StopSpeaking | Listen
    ) -> None:
        await self.settled.wait()  # a request made while the models load waits for them
        loop = self.loop
        if self.bridge is None or loop is None:
            client.send(Notice(text=f"no voice: {self.status.text or 'starting'}", level="error"))
            return
        match request:
            case SetVoice():
                loop.set_mode(request.mode)
                self._set(mode=request.mode)
            case Talk():
                if loop.mode != "push_to_talk":
                    client.send(Notice(text="the talk key works in push-to-talk mode"))
                    return
                loop.talk(request.down)
            case StopSpeaking():
                self.stop_speaking()
            case Listen():
                try:
                    seconds = self.bridge.listen(Path(request.path))
                except VoiceRequestError as error:
                    client.send(Notice(text=str(error), level="error"))
                    return
                client.send(Notice(text=f"listening to {request.path} ({seconds:.1f} s)"))

    def _set(self, **changes: object) -> None:
        self.status = self.status.model_copy(update=changes)
        self.broadcast(self.status)
