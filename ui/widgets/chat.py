"""The conversation: one widget per message, the assistant's filled in as it streams."""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from rich.markdown import Markdown
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

# "aside": a dim one-line remark between messages (speech that came to nothing).
Role = Literal["user", "assistant", "notice", "aside"]
LABELS: dict[Role, str] = {"user": "You", "assistant": "Brain", "notice": "!", "aside": ""}
# The label of a message the assistant says first (a heartbeat found something), unasked.
SAID_FIRST = "said first"
STAGES = {
    "turn_decided": "end of turn",
    "stt_done": "stt",
    "memories": "memories",
    "prompt_sent": "asked",
    "first_token": "first token",
    "first_word": "first word",
    "first_audio_synthesized": "tts",
    "first_audio_out": "sound",
    "first_content_audio_out": "words heard",
}
CUT_MARK = " ✂ cut off here "

_WORD = re.compile(r"[\w']+")
# How far ahead in the written reply a spoken word is looked for: the speech leaves out
# markup and code, but a word it put in ("a link") must not jump far ahead to a match.
_LOOKAHEAD_WORDS = 12


class MessageView(Static):
    """One message. A reply is rendered as Markdown (a cut one as plain text, to mark where
    it stopped); everything else literally. No Rich markup from the model or the user is run.
    A message the assistant said first, unasked, is labelled so and has the class
    ``proactive``: the user should not take it for a reply to something they said."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"message-view--cut", "message-view--unheard"}

    def __init__(
        self,
        role: Role,
        text: str = "",
        note: str = "",
        turn: int | None = None,
        proactive: bool = False,
    ) -> None:
        super().__init__(classes=f"{role} proactive" if proactive else role)
        self.role: Role = role
        self.text = text
        self.note = note
        # The service's number for the turn this reply answers.
        self.turn = turn
        self.proactive = proactive
        # What the user heard of a spoken reply they cut off (None: not cut).
        self.heard: str | None = None

    def on_mount(self) -> None:
        said_first = SAID_FIRST if self.proactive else ""
        self.border_title = " · ".join(
            part for part in (LABELS[self.role], said_first, self.note) if part
        )
        self._render_text()

    def append(self, fragment: str) -> None:
        self.text += fragment
        self._render_text()

    def set_text(self, text: str) -> None:
        self.text = text
        self._render_text()

    def cut(self, heard: str) -> None:
        """The spoken reply stopped after ``heard``; the rest, written or still coming, was
        never heard."""
        self.heard = heard
        self._render_text()

    def show_timings(self, stages_ms: dict[str, float]) -> None:
        self.border_subtitle = timings_line(stages_ms)

    def _render_text(self) -> None:
        if self.heard is None:
            if self.role == "assistant" and self.text:
                # The model writes Markdown; the user's text and notices are shown as typed.
                self.update(Markdown(self.text))
            else:
                self.update(Text(self.text or "…"))
            return
        end = heard_end(self.text, self.heard)
        self.update(
            Text.assemble(
                self.text[:end],
                (CUT_MARK, self.get_component_rich_style("message-view--cut")),
                (self.text[end:].lstrip(), self.get_component_rich_style("message-view--unheard")),
            )
        )


class ChatLog(VerticalScroll):
    """Scrolls to the newest message as it grows."""

    def add(
        self,
        role: Role,
        text: str = "",
        note: str = "",
        turn: int | None = None,
        proactive: bool = False,
    ) -> MessageView:
        view = MessageView(role, text, note, turn, proactive)
        self.mount(view)
        self.scroll_end(animate=False)
        return view

    def reply(self, turn: int) -> MessageView | None:
        """The reply to ``turn``, if this window shows it."""
        for view in self.query(MessageView):
            if view.role == "assistant" and view.turn == turn:
                return view
        return None


def heard_end(text: str, heard: str) -> int:
    """Where in the written ``text`` the spoken ``heard`` stops. Speech is the text read
    aloud (markup dropped, code and links said in words), so the two are matched word by
    word; a spoken word with no written match close ahead is one the speech put in."""
    written = list(_WORD.finditer(text))
    end = at = 0
    for spoken in _WORD.findall(heard.lower()):
        for index in range(at, min(at + _LOOKAHEAD_WORDS, len(written))):
            if written[index].group().lower() == spoken:
                end, at = written[index].end(), index + 1
                break
    # The punctuation that closes the last heard word was heard too (as a pause).
    while 0 < end < len(text) and not text[end].isspace():
        end += 1
    return end


def timings_line(stages_ms: dict[str, float]) -> str:
    """The stages of a spoken turn, in ms after the user stopped speaking, in one short line."""
    stages = " · ".join(f"{STAGES.get(name, name)} {ms:,.0f}" for name, ms in stages_ms.items())
    return f"⏱ {stages} ms"
