"""What every message of the service protocol is built on."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict


class Wire(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def clean_text(text: str) -> str:
    """Text that encodes as UTF-8: bytes that were not UTF-8 (kept by Python as lone
    surrogates, e.g. in argv) become U+FFFD instead of breaking the line."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")


UserText = Annotated[str, AfterValidator(clean_text)]
