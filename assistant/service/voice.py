"""The service's voice: the speech loop built from the settings, on the sound card when there
is one and headless otherwise (an audio file can then be spoken into it with ``brain listen``).

``start`` blocks (it loads Whisper, Piper and the VAD), so the service calls it from a worker
thread; the loop's events arrive on the loop's own threads and go to ``on_event``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from assistant.agent.core_memory import CoreMemory
from assistant.model_paths import ProfileModels
from assistant.parts import load_stt, load_tts
from assistant.settings import Settings
from voice.audio import SAMPLE_RATE
from voice.device import AudioUnavailable, DuplexAudio, SimulatedDevice, open_sound_device
from voice.endpoint import EndpointConfig
from voice.loop import VoiceConfig, VoiceEvent, VoiceLoop
from voice.turn_end import SmartTurn
from voice.vad import SileroVAD

log = logging.getLogger(__name__)

HEADLESS = "none"
# Whisper's initial prompt is capped by the model at 224 tokens; names need far fewer.
PROMPT_CHARS = 400


class VoiceRequestError(Exception):
    """A voice request that cannot be done now; the text is one line for the user."""


class VoiceBridge:
    def __init__(
        self,
        settings: Settings,
        on_event: Callable[[VoiceEvent], None],
        core: Callable[[], CoreMemory | None] = lambda: None,
    ) -> None:
        """``core`` gives the core memory once the memory is open: the names in it prime
        the recogniser."""
        self.settings = settings
        self.on_event = on_event
        self.core = core
        self.loop: VoiceLoop | None = None
        self.device: DuplexAudio | None = None
        self.description = "off"

    def start(self) -> str:
        """Load the models and open the sound card (headless without one); returns one line
        saying what voice runs on."""
        models = ProfileModels(self.settings)
        stt = load_stt(self.settings, models.stt())
        tts = load_tts(self.settings, models.tts())
        device, self.description = self._open_device()
        options = self.settings.voice
        config = VoiceConfig(
            mode=options.mode,
            endpoint=replace(
                EndpointConfig(),
                end_silence_ms=options.end_silence_ms,
                pause_ms=options.pause_ms,
                partial_ms=options.partial_ms,
                max_utterance_s=options.max_utterance_s,
            ),
            barge_in=options.barge_in,
        )
        judge = SmartTurn(models.turn()) if options.turn_judge else None
        self.device = device
        self.loop = VoiceLoop(
            device, stt, tts, SileroVAD(), self.on_event, config, self._prompt, judge
        )
        self.loop.start()
        return self.description

    @property
    def headless(self) -> bool:
        return isinstance(self.device, SimulatedDevice)

    def listen(self, path: Path) -> float:
        """Speak an audio file into the headless microphone; returns its length in seconds."""
        if not isinstance(self.device, SimulatedDevice):
            raise VoiceRequestError(
                '`brain listen` needs headless voice (audio.input_device = "none", or no '
                "sound card); this service listens to a microphone"
                if self.device is not None
                else "voice is not running"
            )
        from faster_whisper import decode_audio

        try:
            audio = decode_audio(str(path), sampling_rate=SAMPLE_RATE)
        except (OSError, ValueError) as error:
            raise VoiceRequestError(f"cannot read {path}: {error}") from None
        except Exception as error:  # PyAV's own errors for files that are not audio
            raise VoiceRequestError(f"{path} is not audio ({type(error).__name__})") from None
        self.device.speak(audio)
        return len(audio) / SAMPLE_RATE

    def close(self) -> None:
        if self.loop is not None:
            self.loop.close()

    def _open_device(self) -> tuple[DuplexAudio, str]:
        audio = self.settings.audio
        if audio.input_device == HEADLESS:
            return _headless(), "headless (audio.input_device = none): `brain listen FILE` speaks"
        try:
            device = open_sound_device(_device(audio.input_device), _device(audio.output_device))
        except AudioUnavailable as error:
            log.warning("%s", error)
            return _headless(), f"{error}; headless: `brain listen FILE` speaks"
        return device, "microphone and speaker"

    def _prompt(self) -> str | None:
        core = self.core()
        return None if core is None else recogniser_prompt(core)


def recogniser_prompt(core: CoreMemory) -> str | None:
    """Whisper's initial prompt: the proper names in the human block of core memory (the
    user's, their people and places), so they are spelled as the user spells them."""
    text = core.blocks["human"].value if "human" in core.blocks else ""
    names = dict.fromkeys(
        word
        for word in re.findall(r"\b[A-Z][\w'-]*[a-z][\w'-]*\b", text)
        if word.lower() not in _NOT_NAMES
    )
    if not names:
        return None
    return f"Names: {', '.join(names)}."[:PROMPT_CHARS]


# Capitalised words that start sentences in the human block rather than name anyone.
_NOT_NAMES = frozenset(
    {"i", "the", "a", "an", "my", "his", "her", "their", "they", "he", "she", "it", "this"}
    | {"that", "user", "name", "is", "likes", "lives", "works", "wants", "prefers", "has"}
)


def _headless() -> SimulatedDevice:
    # Silence at the pace of a real microphone, so timings and barge-in behave as on a
    # sound card; what would be played is paced and dropped.
    return SimulatedDevice(realtime=True, until_closed=True)


def _device(name: str | None) -> int | str | None:
    if name is None or not name.strip():
        return None
    return int(name) if name.strip().isdigit() else name
