"""The speech loop: frames from a duplex device through echo suppression, VAD and endpointing
into Whisper, and replies out through Piper, with barge-in.

Two threads: one reads every frame (it must never wait on a model, or barge-in and the
microphone would lag), one transcribes finished utterances. Replies are synthesised on their
own thread (``ReplySpeech``). Everything that happens is reported through ``on_event`` as a
typed event, from those threads; the owner decides what a heard utterance means.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from voice.audio import FRAME_S, SILENCE_DBFS, Frame, level_dbfs
from voice.device import DuplexAudio, DuplexFrame
from voice.echo import EchoConfig, EchoSuppressor
from voice.endpoint import (
    EndpointConfig,
    Endpointer,
    EndpointEvent,
    Paused,
    Speaking,
    SpeechDropped,
    Utterance,
)
from voice.speech_out import ChunkConfig, ReplySpeech
from voice.stt import SpeechToText, Transcript, not_heard
from voice.timing import Timings
from voice.tts import TextToSpeech
from voice.turn_end import COMPLETE_AT, TurnJudge
from voice.vad import SpeechDetector

log = logging.getLogger(__name__)

Mode = Literal["always", "push_to_talk", "muted"]
VoiceState = Literal["listening", "hearing", "thinking", "speaking", "muted", "push_to_talk"]
MODES: tuple[Mode, ...] = ("always", "push_to_talk", "muted")


@dataclass(frozen=True)
class VoiceConfig:
    mode: Mode = "always"
    endpoint: EndpointConfig = field(default_factory=EndpointConfig)
    echo: EchoConfig = field(default_factory=EchoConfig)
    chunking: ChunkConfig = field(default_factory=ChunkConfig)
    # Whether speaking over a reply stops it (off: the reply plays out; the speech still counts).
    barge_in: bool = True
    # How often the input level is reported (a meter needs no more than ~10 a second).
    level_interval_s: float = 0.1


@dataclass(frozen=True)
class StateChanged:
    state: VoiceState


@dataclass(frozen=True)
class LevelChanged:
    dbfs: float


@dataclass(frozen=True)
class Heard:
    """An utterance, transcribed. ``cut``: it hit the maximum length mid-speech."""

    transcript: Transcript
    timings: Timings
    cut: bool


@dataclass(frozen=True)
class HeardSoFar:
    """What the user has said so far, transcribed while they speak, or at a pause
    (``paused``): they may go on, or what was said by a pause may be all (then the
    utterance's ``Heard`` follows with the same transcript, not made again)."""

    text: str
    paused: bool = True


@dataclass(frozen=True)
class NotHeard:
    """Sound that came to nothing: too short, or what Whisper says for noise."""

    reason: str


@dataclass(frozen=True)
class BargedIn:
    """The user spoke over a reply; playback stopped. ``heard`` is what had been played,
    ``at`` the time of the frame that decided, ``stop_ms`` how long stopping took from there
    (the device's own output latency comes on top)."""

    heard: str
    at: float
    stop_ms: float


@dataclass(frozen=True)
class FirstAudio:
    """The first sound of the reply's content left the speaker (after an acknowledgement it
    opened with), or it played out with none; ``timings`` has every stage so far."""

    timings: Timings


VoiceEvent = StateChanged | LevelChanged | Heard | HeardSoFar | NotHeard | BargedIn | FirstAudio


class VoiceLoop:
    def __init__(
        self,
        device: DuplexAudio,
        stt: SpeechToText,
        tts: TextToSpeech,
        vad: SpeechDetector,
        on_event: Callable[[VoiceEvent], None],
        config: VoiceConfig = VoiceConfig(),
        prompt: Callable[[], str | None] = lambda: None,
        judge: TurnJudge | None = None,
    ) -> None:
        """``prompt`` gives Whisper's initial prompt for each utterance (names it should
        spell right, e.g. from the user's core memory); ``judge``, if given, is asked at each
        short pause whether the user has finished (else only the long silence ends a turn)."""
        self.device = device
        self.stt = stt
        self.tts = tts
        self.config = config
        self.on_event = on_event
        self.prompt = prompt
        self.suppressor = EchoSuppressor(config.echo, vad)
        self.endpointer = Endpointer(config.endpoint)
        self._mode: Mode = config.mode
        self._talking = False  # push-to-talk: the key is down
        self._held: list[Frame] = []  # push-to-talk: audio since the key went down
        self._held_since = 0.0
        self._forget = False  # the mode changed: the endpointer forgets the speech under way
        self._thinking = False
        self._reply: ReplySpeech | None = None
        self._lock = threading.Lock()
        # Utterances to transcribe, and pauses to transcribe what was said so far at.
        self._utterances: queue.SimpleQueue[Utterance | Paused | Speaking | None] = (
            queue.SimpleQueue()
        )
        # The last pause's transcript, by the end of its last speech frame.
        self._so_far: tuple[float, Transcript] | None = None
        # Pauses for the judge's thread, and the numbers of those it judged finished.
        self.judge = judge
        self._pauses: queue.SimpleQueue[Paused | None] = queue.SimpleQueue()
        self._finished: queue.SimpleQueue[int] = queue.SimpleQueue()
        self._state: VoiceState | None = None
        self._level_at = 0.0
        self._threads = [
            threading.Thread(target=self._listen, name="voice-frames", daemon=True),
            threading.Thread(target=self._transcribe, name="voice-stt", daemon=True),
        ]
        if judge is not None:
            self._threads.append(
                threading.Thread(target=self._judge, args=(judge,), name="voice-turn", daemon=True)
            )
        self._closed = threading.Event()

    # Control (any thread)

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def close(self) -> None:
        self._closed.set()
        self.stop_speaking()
        self.device.close()
        self._utterances.put(None)
        self._pauses.put(None)
        for thread in self._threads:
            if thread.is_alive() and thread is not threading.current_thread():
                thread.join(timeout=5)

    @property
    def mode(self) -> Mode:
        return self._mode

    def set_mode(self, mode: Mode) -> None:
        with self._lock:
            self._mode = mode
            self._talking = False
            self._held = []
            # The endpointer is the frame thread's: reset from here, it was changed halfway
            # through a frame it was reading. It forgets the speech at its next frame.
            self._forget = True

    def talk(self, down: bool) -> None:
        """Push-to-talk: the key went down (start hearing) or up (the utterance ends)."""
        if self._mode != "push_to_talk":
            return
        if down:
            self.stop_speaking()
        with self._lock:
            self._talking = down
            if down:
                self._held, self._held_since = [], time.monotonic()
                return
            held, self._held = self._held, []
        if held:
            audio = np.concatenate(held)
            now = time.monotonic()
            self._utterances.put(Utterance(audio, self._held_since, now, now, cut=False))

    def thinking(self, busy: bool) -> None:
        """The owner is working on a reply (shown as "thinking" while nothing plays)."""
        self._thinking = busy

    def speak(self, timings: Timings | None = None, filler: str = "") -> ReplySpeech:
        """Start a reply: feed its text to the returned object as it streams, then finish it
        (``filler``: a fixed phrase it may open with, not its content). A reply still playing
        is cut off first."""
        self.stop_speaking()
        reply = ReplySpeech(
            self.tts,
            self.device.play,
            self.config.chunking,
            timings,
            on_first_audio=lambda t: self.on_event(FirstAudio(t)),
            filler=filler,
        )
        with self._lock:
            self._reply = reply
        return reply

    def stop_speaking(self) -> str | None:
        """Stop the reply now (a key, or a barge-in); what had been played, None if nothing
        was playing."""
        with self._lock:
            reply, self._reply = self._reply, None
        if reply is None or reply.done:
            return None
        reply.cancel()
        self.device.stop_playback()
        return reply.spoken_text()

    # The frame thread

    def _listen(self) -> None:
        try:
            for frame in self.device.frames():
                if self._closed.is_set():
                    break
                self._frame(frame)
        except Exception:  # the device died: say so and stop listening; text goes on
            log.exception("the voice loop stopped")
        finally:
            self._utterances.put(None)

    def _frame(self, frame: DuplexFrame) -> None:
        reply = self._reply
        if reply is not None:
            reply.played(frame.speech_played)
        verdict = self.suppressor.process(frame.mic, frame.played)
        with self._lock:
            mode, forget, self._forget = self._mode, self._forget, False
        if forget:
            self.endpointer.reset()
        if mode == "muted":
            self._show(frame.at, SILENCE_DBFS, muted=True)
            return
        if mode == "push_to_talk":
            with self._lock:
                if self._talking:
                    self._held.append(verdict.residual)
                    if len(self._held) * FRAME_S >= self.config.endpoint.max_utterance_s:
                        # Like the endpointer: the longest utterance goes out, hearing goes on.
                        audio, self._held = np.concatenate(self._held), []
                        self._utterances.put(
                            Utterance(audio, self._held_since, frame.at, frame.at, cut=True)
                        )
                        self._held_since = frame.at
            self._show(frame.at, level_dbfs(verdict.residual))
            return
        speaking = reply is not None and not reply.done
        if speaking and verdict.barge_in and self.config.barge_in:
            self._barge_in(frame.at)
        elif not speaking:
            self.suppressor.reset_barge_in()
        # Over a reply, speech opens an utterance only once the suppressor has confirmed it is
        # the user's (the barge-in decision): a syllable of echo now and then that pokes out of
        # the canceller would otherwise start one, and the user's words would be heard with the
        # reply's before them.
        is_speech = verdict.user_speech and (not speaking or verdict.barge_in)
        event = self.endpointer.feed(verdict.residual, is_speech, frame.at)
        if speaking and verdict.barge_in_began and event is None:
            event = self.endpointer.begin(frame.at, self.config.echo.barge_in_ms / 1000)
        self._handle(event)
        while not self._finished.empty():  # judged while the pause went on
            self._handle(self.endpointer.finish(self._finished.get(), frame.at))
        self._show(frame.at, self.endpointer.level_dbfs)

    def _handle(self, event: EndpointEvent | None) -> None:
        if isinstance(event, Utterance):
            self._utterances.put(event)
        elif isinstance(event, SpeechDropped):
            self.on_event(NotHeard("too short to be speech"))
        elif isinstance(event, Paused):
            self._utterances.put(event)
            if self.judge is not None:
                self._pauses.put(event)
        elif isinstance(event, Speaking):
            self._utterances.put(event)

    def _barge_in(self, at: float) -> None:
        started = time.monotonic()
        heard = self.stop_speaking()
        self.suppressor.reset_barge_in()
        if heard is not None:
            stop_ms = (time.monotonic() - started) * 1000.0 + max(0.0, started - at) * 1000.0
            self.on_event(BargedIn(heard, at, round(stop_ms, 1)))

    def _show(self, at: float, level: float, muted: bool = False) -> None:
        state = self._current_state(muted)
        if state != self._state:
            self._state = state
            self.on_event(StateChanged(state))
        if at - self._level_at >= self.config.level_interval_s:
            self._level_at = at
            self.on_event(LevelChanged(round(float(level), 1)))

    def _current_state(self, muted: bool) -> VoiceState:
        reply = self._reply
        replying = reply is not None and not reply.done
        if muted:
            return "muted"
        if replying and reply is not None and reply.started:
            return "speaking"
        if self._talking or self.endpointer.speaking:
            return "hearing"
        if self._thinking or replying:  # a reply on its way to the speaker
            return "thinking"
        return "push_to_talk" if self._mode == "push_to_talk" else "listening"

    # The turn judge's thread: a pause is judged while frames go on (a speaker who starts
    # again voids the judgement: Endpointer.finish).

    def _judge(self, judge: TurnJudge) -> None:
        while (pause := self._pauses.get()) is not None:
            try:
                finished = judge.finished(pause.audio) >= COMPLETE_AT
            except Exception:  # the long silence still ends the turn
                log.exception("the turn judge failed")
                continue
            if finished:
                self._finished.put(pause.number)

    # The transcription thread: utterances, and what was said so far, every second of speech
    # and at each pause (so the owner can start on it, and an utterance that ends at a pause
    # is transcribed already)

    def _transcribe_so_far(self, so_far: Paused | Speaking) -> None:
        if not self._utterances.empty():  # more to do, this one is behind it
            return
        try:
            transcript = self.stt.transcribe(so_far.audio, self.prompt())
        except Exception:  # the utterance is transcribed when it ends anyway
            log.exception("transcribing what was said so far failed")
            return
        if isinstance(so_far, Paused):
            self._so_far = (so_far.ended_at, transcript)
        if not_heard(transcript) is None:
            self.on_event(HeardSoFar(transcript.text, paused=isinstance(so_far, Paused)))

    def _transcribe(self) -> None:
        while (utterance := self._utterances.get()) is not None:
            if isinstance(utterance, Paused | Speaking):
                self._transcribe_so_far(utterance)
                continue
            timings = Timings(end_of_speech=utterance.ended_at, turn_decided=utterance.emitted_at)
            so_far, self._so_far = self._so_far, None
            if so_far is not None and so_far[0] == utterance.ended_at and not utterance.cut:
                transcript = so_far[1]  # nothing was said after that pause: the same audio
            else:
                try:
                    transcript = self.stt.transcribe(utterance.audio, self.prompt())
                except Exception as error:  # one bad utterance must not end listening
                    log.exception("transcription failed")
                    self.on_event(NotHeard(f"speech recognition failed: {error}"))
                    continue
            timings.mark("stt_done")
            reason = not_heard(transcript)
            if reason is not None:
                log.info("dropped an utterance: %s", reason)
                self.on_event(NotHeard(reason))
                continue
            self.on_event(Heard(transcript, timings, utterance.cut))
