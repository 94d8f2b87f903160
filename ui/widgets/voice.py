"""The voice part of the status bar: what the speech loop is doing, and the microphone level."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult, RenderResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Label

from assistant.protocol.voice import Voice, VoiceState

# The meter's range: quieter than FLOOR shows as empty (room noise), 0 dBFS is full scale.
FLOOR_DBFS = -60.0
METER_CELLS = 10
# Partial cells, so the bar moves smoothly in a space this small.
EIGHTHS = " ▏▎▍▌▋▊▉█"
# Louder than this, the voice is close to clipping.
LOUD_DBFS = -6.0

# Emoji with a fixed double width in terminals, so the words after them stay put.
GLYPHS: dict[VoiceState, str] = {
    "off": "⛔",
    "starting": "⏳",
    "listening": "🎤",
    "hearing": "👂",
    "thinking": "💭",
    "speaking": "🔊",
    "muted": "🔇",
    "push_to_talk": "✋",
}
WORDS: dict[VoiceState, str] = {
    "off": "voice off",
    "starting": "voice starting",
    "listening": "listening",
    "hearing": "hearing you",
    "thinking": "thinking",
    "speaking": "speaking",
    "muted": "muted",
    "push_to_talk": "push to talk",
}


class LevelMeter(Widget):
    """A short bar for the microphone level. Updates come about ten times a second, so the
    level is kept in eighths of a cell: an unchanged bar repaints nothing, a changed one
    repaints only these few cells."""

    eighths: reactive[int] = reactive(0)

    def show(self, dbfs: float) -> None:
        share = (min(dbfs, 0.0) - FLOOR_DBFS) / -FLOOR_DBFS
        self.eighths = round(max(share, 0.0) * METER_CELLS * 8)
        self.set_class(dbfs > LOUD_DBFS, "-loud")

    def render(self) -> RenderResult:
        full, part = divmod(self.eighths, 8)
        bar = "█" * full + (EIGHTHS[part] if part else "")
        return Text(bar.ljust(METER_CELLS))


class VoiceIndicator(Horizontal):
    """The voice state in words; the full story (what voice runs on, why it is off) is in
    the tooltip, since the status bar has room for a few words only."""

    def compose(self) -> ComposeResult:
        yield Label(id="voice-state")
        yield LevelMeter(id="voice-level")

    def on_mount(self) -> None:
        # Nothing is known of the voice until the service says.
        self.display = False

    def show(self, voice: Voice, hint: str = "") -> None:
        """The state and, where given, a short ``hint`` (the key to press next)."""
        self.display = True
        label = self.query_one("#voice-state", Label)
        words = WORDS[voice.state]
        if voice.state == "off" and (why := off_reason(voice.text)):
            words = f"{words}: {why}"
        label.update(f"{GLYPHS[voice.state]} {words}" + (f" ({hint})" if hint else ""))
        label.set_classes(voice.state)
        self.tooltip = voice.text or None
        self.query_one(LevelMeter).display = voice.state not in ("off", "starting")

    def level(self, dbfs: float) -> None:
        self.query_one(LevelMeter).show(dbfs)


def off_reason(text: str) -> str:
    """Why voice is off, without the "voice is off" the state already says."""
    return text.removeprefix("voice is off").lstrip(":; ").strip()
