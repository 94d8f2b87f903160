"""The protocol's voice messages: how the service listens, the push-to-talk key, and what
the voice loop is doing."""

from __future__ import annotations

from typing import Literal

from assistant.protocol.common import Wire

VoiceMode = Literal["always", "push_to_talk", "muted"]
VoiceState = Literal[
    "off", "starting", "listening", "hearing", "thinking", "speaking", "muted", "push_to_talk"
]


# Client to service


class SetVoice(Wire):
    """Listen always, only while the talk key is down, or not at all."""

    type: Literal["voice_mode"] = "voice_mode"
    mode: VoiceMode


class Talk(Wire):
    """Push-to-talk: the talk key went down (``down``) or up (the utterance ends)."""

    type: Literal["talk"] = "talk"
    down: bool


class StopSpeaking(Wire):
    """Stop the reply being spoken, as if the user had cut in."""

    type: Literal["stop_speaking"] = "stop_speaking"


class Listen(Wire):
    """Play an audio file into the microphone as if it were spoken (headless voice only)."""

    type: Literal["listen"] = "listen"
    path: str


VoiceRequest = SetVoice | Talk | StopSpeaking | Listen


# Service to client


class Voice(Wire):
    """The voice loop's state; ``level_dbfs`` is the microphone level (for a meter),
    ``text`` says why voice is off or what it runs on."""

    type: Literal["voice"] = "voice"
    state: VoiceState
    mode: VoiceMode = "always"
    level_dbfs: float = -100.0
    text: str = ""


class HeardNothing(Wire):
    """Sound the voice loop took for speech came to nothing (too short, or noise)."""

    type: Literal["not_heard"] = "not_heard"
    reason: str


class VoiceTimings(Wire):
    """How long each stage of a spoken turn took, in ms after the end of the user's speech."""

    type: Literal["voice_timings"] = "voice_timings"
    turn: int
    stages_ms: dict[str, float]


VoiceUpdate = Voice | HeardNothing | VoiceTimings
