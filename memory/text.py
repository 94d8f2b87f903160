"""Text as the stores keep it: cleaned of what no store or screen can hold, and how much of it
is embedded."""

from __future__ import annotations

import re

# A huge paste is kept whole; only this much of it is embedded and rated.
MAX_EMBED_CHARS = 4_000

_SURROGATES = re.compile("[\ud800-\udfff]")


def storable_text(text: str) -> str:
    """Text that any store and screen can hold: lone surrogates (from undecodable bytes) become
    U+FFFD, NULs are dropped, and the ends are stripped of whitespace."""
    return _SURROGATES.sub("\ufffd", text).replace("\x00", "").strip()
