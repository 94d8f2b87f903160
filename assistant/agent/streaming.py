"""Pulling the user-facing text out of an action object while the model is still writing it,
so a send_message reaches the screen and the speaker token by token."""

from __future__ import annotations

import json
import re

_MESSAGE_START = re.compile(r'"tool"\s*:\s*"send_message".*?"message"\s*:\s*"', re.DOTALL)
_HIGH_SURROGATES = ("d8", "d9", "da", "db")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class MessageStream:
    """Feed it the raw chunks of one action; it returns the newly decoded part of the
    send_message text each time (empty while there is none)."""

    def __init__(self) -> None:
        self.raw = ""
        self.text = ""
        self.complete = False
        self._position: int | None = None

    def feed(self, chunk: str) -> str:
        self.raw += chunk
        if self.complete:
            return ""
        if self._position is None:
            found = _MESSAGE_START.search(self.raw)
            if found is None:
                return ""
            self._position = found.end()
        decoded, self._position, self.complete = _decode(self.raw, self._position)
        self.text += decoded
        return decoded


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
