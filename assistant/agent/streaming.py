"""Reading one step's reply while the model is still writing it, so a send_message reaches the
screen and the speaker token by token: the text is pulled out of an action object, out of a
native send_message call's arguments, or is the reply's plain content itself."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from assistant.agent.actions import Action, ActionError, parse_action, parse_call
from assistant.agent.tools import SendMessage, Tool
from assistant.llm.messages import StreamDelta, TextDelta, ToolCallDelta

log = logging.getLogger(__name__)

# A message's short form, {"message": "..."} (grounded: {"known": true, "message": "..."}), or
# the send_message action written out.
_MESSAGE_START = re.compile(
    r'^\s*\{\s*(?:"known"\s*:\s*(?:true|false)\s*,\s*)?"message"\s*:\s*"'
    r'|"tool"\s*:\s*"send_message".*?"message"\s*:\s*"',
    re.DOTALL,
)
# A JSON action's tool, once its name is closed: {"tool": "set_reminder", ...
_TOOL_NAMED = re.compile(r'\s*\{\s*"tool"\s*:\s*"(\w+)"')
# In a native send_message call the arguments are {"message": "...", "request_heartbeat": ...}.
_ARGUMENT_START = re.compile(r'"message"\s*:\s*"')
# A message's text starts within the first characters of its action or arguments (the longest
# opening, with request_heartbeat written first, is about 100). Searched for in the whole reply
# at every chunk, a 300,000-character reply with none took minutes.
_START_WITHIN = 1_000
# A leading "[tag]" longer than this is not a tag but the reply.
_TAG_CHARS = 40
# A plain reply written as a call of the message tool, which the 0.5B model wrote at times
# with no tool offered: send_message("...") or send_message(message="...").
_CALL_NAME = "send_message("
_CALL_WRITTEN = re.compile(r'send_message\(\s*(?:message\s*=\s*)?"')
# Or as a JSON action of a form of its own, fenced or not ({"action": "send_message",
# "content": "..."}): once one was in the window, the 0.5B model wrote every later reply so.
_JSON_WRITTEN = re.compile(
    r'^(?:```(?:json)?\s*)?\{\s*"\w+"\s*:\s*"send_message"\s*,.*?"(?:content|message|text)"\s*:\s*"',
    re.DOTALL,
)
# How much of a plain reply that opens like a JSON object is held while it may be one.
_JSON_WITHIN = 120
_HIGH_SURROGATES = ("d8", "d9", "da", "db")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class MessageStream:
    """Feed it the raw chunks of one action; it returns the newly decoded part of the
    send_message text each time (empty while there is none)."""

    def __init__(self, start: re.Pattern[str] = _MESSAGE_START) -> None:
        self.raw = ""
        self.text = ""
        self.complete = False
        self._start = start
        self._position: int | None = None

    @classmethod
    def of_arguments(cls) -> MessageStream:
        """For the arguments of a native send_message call rather than a whole action."""
        return cls(_ARGUMENT_START)

    def feed(self, chunk: str) -> str:
        self.raw += chunk
        if self.complete:
            return ""
        if self._position is None:
            found = self._start.search(self.raw[:_START_WITHIN])
            if found is None:
                return ""
            self._position = found.end()
        decoded, self._position, self.complete = _decode(self.raw, self._position)
        self.text += decoded
        return decoded


@dataclass
class _Call:
    name: str = ""
    arguments: str = ""


class ReplyStream:
    """One step's reply as it streams, in the form the LLM was asked for.

    JSON action (``native`` False): the content is the action object, and its send_message
    text is shown as it is written. Native tool calling: plain content is shown as it comes
    and counts as a send_message; content that starts with "{" is read as an action object
    instead (the model may imitate the history, which keeps actions in that form); the first
    tool call is the action, a send_message call's text shown while its arguments arrive.
    """

    def __init__(self, native: bool, plain: bool = False) -> None:
        """``plain``: the reply was asked for as plain text (no tools offered): all of it is
        the message, kept in the history as written."""
        self._native = native or plain
        self._plain = plain
        # Everything shown to the user so far.
        self.text = ""
        self._content = MessageStream()
        # Whether the content is plain text (native only; known at its first visible char).
        self._prose: bool | None = None if self._native else False
        self._prose_text = ""
        # Plain text held back while it may be a leading "[tag]" or a written call (plain
        # only), and the message of a written call.
        self._opening: str | None = "" if plain else None
        self._written_call: MessageStream | None = None
        self._calls: dict[int, _Call] = {}
        self._message: MessageStream | None = None
        self._shown_from: type | None = None

    def feed(self, delta: StreamDelta) -> str:
        """Take the next piece of the reply; returns the text to show now (often empty)."""
        if isinstance(delta, TextDelta):
            piece = self._feed_content(delta.text)
        else:
            piece = self._feed_call(delta)
        if not piece:
            return ""
        if self.text and self._shown_from is not type(delta):  # text from a second source
            piece = "\n" + piece
        self._shown_from = type(delta)
        self.text += piece
        return piece

    def flush(self) -> str:
        """What a plain reply still holds at its end, its text: an opening that only looked
        like a "[tag]" or a call written out."""
        held, self._opening = self._opening or "", None
        if not held:
            return ""
        self._prose = True
        self._prose_text += held
        self.text += held
        return held

    @property
    def tool_named(self) -> str | None:
        """The tool the reply calls, as soon as its name is written whole (None for a
        message, or before)."""
        if self._calls:
            first = next(iter(self._calls.values()))
            return (first.name or None) if first.arguments else None
        found = _TOOL_NAMED.match(self._content.raw)
        return found.group(1) if found else None

    def finish(self, tools: Mapping[str, Tool]) -> tuple[str, Action | ActionError]:
        """What the reply comes to: the text said ahead of a tool call (empty if none), and
        the action to take, or what is wrong with it."""
        if not self._calls:
            if self._prose:  # plain text: a message
                text = self._prose_text.strip()
                written = text if self._plain else None
                return "", Action("send_message", SendMessage(message=text), False, written)
            return "", _outcome(lambda: self._read_action(tools), self._content)
        first, *rest = self._calls.values()
        if rest:
            log.warning(
                "the model called %d tools in one reply; acting on %s only, not on %s",
                len(self._calls),
                first.name,
                ", ".join(call.name for call in rest),
            )
        said = self._prose_text.strip() if self._prose else self._content.text
        return said, _outcome(lambda: parse_call(first.name, first.arguments, tools), self._message)

    def _read_action(self, tools: Mapping[str, Tool]) -> Action:
        """The content as an action object; in JSON action mode it keeps the text as written
        (native tool calling keeps its actions in one form, whatever the model wrote)."""
        raw = self._content.raw
        action = parse_action(raw, tools)
        return action if self._native else replace(action, written=raw)

    def _feed_content(self, text: str) -> str:
        if self._written_call is not None:
            text = self._written_call.feed(text)
            if not text:
                return ""
        elif self._opening is not None:
            text = self._past_tag(text)
            if not text:
                return ""
        if self._prose is None:
            text = text.lstrip()
            if not text:
                return ""
            self._prose = self._plain or not text.startswith("{")
        if self._prose:
            self._prose_text += text
            return text
        return self._content.feed(text)

    def _past_tag(self, text: str) -> str:
        """A plain reply's text once past a "[tag]" it opens with (the window's notes are in
        brackets, and the 0.5B model began replies with one: "[reply] ..."), and the message
        of a call of the message tool written out as the reply."""
        assert self._opening is not None
        held = (self._opening + text).lstrip()
        if held.startswith("["):
            end = held.find("]")
            if end < 0 and len(held) < _TAG_CHARS:
                self._opening = held
                return ""
            if end >= 0:
                held = held[end + 1 :].lstrip()
        if held.startswith(("{", "`")):
            if _JSON_WRITTEN.match(held) is not None:
                self._opening = None
                self._written_call = MessageStream(_JSON_WRITTEN)
                return self._written_call.feed(held)
            if len(held) < _JSON_WITHIN:
                self._opening = held  # it may yet be an action written out
                return ""
        if len(held) < len(_CALL_NAME) and _CALL_NAME.startswith(held):
            self._opening = held  # it may yet be a call written out
            return ""
        if held.startswith(_CALL_NAME):
            if _CALL_WRITTEN.match(held) is None and len(held) < _TAG_CHARS:
                self._opening = held
                return ""
            if _CALL_WRITTEN.match(held) is not None:
                # Its message is the reply, said without the call around it.
                self._opening = None
                self._written_call = MessageStream(_CALL_WRITTEN)
                return self._written_call.feed(held)
        self._opening = None
        return held

    def _feed_call(self, delta: ToolCallDelta) -> str:
        call = self._calls.setdefault(delta.index, _Call())
        if delta.name and delta.name != call.name:  # some servers repeat the name each time
            call.name += delta.name
        call.arguments += delta.arguments
        if call is not next(iter(self._calls.values())) or call.name != "send_message":
            return ""
        if self._message is None:  # the name may come whole only after some arguments
            self._message = MessageStream.of_arguments()
            return self._message.feed(call.arguments)
        return self._message.feed(delta.arguments)


def _outcome(parse: Callable[[], Action], message: MessageStream | None) -> Action | ActionError:
    try:
        return parse()
    except ActionError as error:
        if message is not None and message.complete:  # it reached the user whole: it was said
            return Action("send_message", SendMessage(message=message.text), False)
        if message is not None and message.text.strip():
            # The reply stopped inside its message (at the token cap: a rambling model). What
            # the user saw was said; asking again would say it twice.
            log.warning("the message was cut off after %d characters", len(message.text))
            return Action("send_message", SendMessage(message=message.text.strip()), False)
        return error


def _decode(raw: str, position: int) -> tuple[str, int, bool]:
    """Decode the JSON string body from ``position`` as far as the text allows; returns the
    text, where to go on from, and whether the closing quote was reached."""
    out: list[str] = []
    while position < len(raw):
        char = raw[position]
        if char == '"':
            return "".join(out), position + 1, True
        if char != "\\":
            out.append(char)
            position += 1
            continue
        if position + 1 >= len(raw):
            break  # an escape split across chunks: wait for the rest
        code = raw[position + 1]
        if code == "u":
            # A character outside the BMP is a surrogate pair: two escapes, read together.
            width = 12 if raw[position + 2 : position + 4].lower() in _HIGH_SURROGATES else 6
            if position + width > len(raw):
                break
            try:
                out.append(json.loads(f'"{raw[position : position + width]}"'))
            except json.JSONDecodeError:
                out.append("\ufffd")
            position += width
            continue
        out.append(_ESCAPES.get(code, code))
        position += 2
    return "".join(out), position, False
