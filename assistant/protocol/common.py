"""What every message of the service protocol is built on, and the messages every domain
shares: a request's failure and a notice for the user."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict

PROTOCOL_VERSION = 9
# The longest line either side sends or accepts (a message is capped far below it).
MAX_LINE_BYTES = 1 << 20


class ProtocolError(Exception):
    """A line that is not a message of this protocol; the text says why, in one line."""


class Wire(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def valid_utf8(text: str) -> str:
    """Text that encodes as UTF-8: bytes that were not UTF-8 (kept by Python as lone
    surrogates, e.g. in argv) become U+FFFD instead of breaking the line."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


# Text a client typed or spoke, made valid UTF-8 as it is read.
ClientText = Annotated[str, AfterValidator(valid_utf8)]


class Answer(Wire):
    """The answer to a request that carries the client's ``ref``: it echoes the ref and goes
    to that client alone."""

    type: str
    ref: str


class Failed(Answer):
    """A request with a ``ref`` could not be carried out; ``text`` says why in one line."""

    type: Literal["failed"] = "failed"
    text: str


class Notice(Wire):
    """Something the user should read: a refused request, a setting that changed."""

    type: Literal["notice"] = "notice"
    text: str
    level: Literal["info", "warning", "error"] = "info"


CommonUpdate = Notice | Failed
