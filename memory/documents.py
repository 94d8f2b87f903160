"""Reading the user's documents (plain text, Markdown, PDF) as text for archival storage.

Only what the caller allows is read: ``allowed`` names the files and folders the user has
opened to the assistant, and a path outside them (after resolving ``..`` and links) is
refused. A folder is read recursively, hidden entries skipped, in a stable order.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pypdf import PdfReader
from pypdf.errors import PdfReadError

log = logging.getLogger(__name__)

TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown", ".rst", ".text"})
PDF_SUFFIXES = frozenset({".pdf"})
SUFFIXES = TEXT_SUFFIXES | PDF_SUFFIXES
MAX_FILE_BYTES = 20_000_000
MAX_FILES = 200


class DocumentError(ValueError):
    """A document that cannot be read; the message says which and why, in one line."""


@dataclass(frozen=True)
class Document:
    path: Path
    text: str
    # Set when some of the file could not be read as it is (bad bytes, a page without text).
    warning: str | None = None


def allowed_path(path: str | Path, allowed: Sequence[Path]) -> Path:
    """``path`` resolved, if it lies inside one of the ``allowed`` files or folders."""
    if not allowed:
        raise DocumentError(
            "no files or folders are open to the assistant (tasks.allowed_paths is empty)"
        )
    resolved = Path(path).expanduser().resolve()
    for root in allowed:
        root = root.expanduser().resolve()
        if resolved == root or resolved.is_relative_to(root):
            return resolved
    roots = ", ".join(str(r) for r in allowed)
    raise DocumentError(f"{resolved} is outside the allowed paths ({roots})")


def documents_at(path: Path) -> list[Path]:
    """The readable documents at ``path``: the file itself, or a folder's, recursively."""
    if path.is_file():
        if path.suffix.lower() not in SUFFIXES:
            raise DocumentError(f"{path.name}: only {', '.join(sorted(SUFFIXES))} files are read")
        return [path]
    if not path.is_dir():
        raise DocumentError(f"{path} does not exist")
    found = sorted(_walk(path))
    if len(found) > MAX_FILES:
        raise DocumentError(
            f"{path} holds {len(found):,} documents; at most {MAX_FILES} are read at once "
            "(name a smaller folder)"
        )
    return found


def _walk(folder: Path) -> Iterator[Path]:
    for entry in folder.iterdir():
        if entry.name.startswith("."):
            continue
        if entry.is_dir() and not entry.is_symlink():
            yield from _walk(entry)
        elif entry.is_file() and entry.suffix.lower() in SUFFIXES:
            yield entry


def read_document(path: Path) -> Document:
    """The text of one document; raises :class:`DocumentError` when there is none."""
    try:
        size = path.stat().st_size
    except OSError as error:
        raise DocumentError(f"{path.name}: {error.strerror}") from None
    if size > MAX_FILE_BYTES:
        raise DocumentError(f"{path.name} is {size / 1e6:.0f} MB; at most 20 MB is read")
    document = _read_pdf(path) if path.suffix.lower() in PDF_SUFFIXES else _read_text(path)
    if not document.text.strip():
        raise DocumentError(f"{path.name} has no text to read")
    return document


def _read_text(path: Path) -> Document:
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise DocumentError(f"{path.name}: {error.strerror}") from None
    try:
        return Document(path, raw.decode("utf-8-sig"))
    except UnicodeDecodeError:
        # Kept rather than refused: the unreadable bytes become U+FFFD and the user is told.
        text = raw.decode("utf-8", errors="replace")
        return Document(path, text, f"{path.name} is not valid UTF-8; bad bytes were replaced")


def _read_pdf(path: Path) -> Document:
    try:
        reader = PdfReader(path)
        encrypted = reader.is_encrypted
        pages = [] if encrypted else [page.extract_text() or "" for page in reader.pages]
    except (PdfReadError, OSError, ValueError, KeyError) as error:
        raise DocumentError(f"{path.name} is not a readable PDF: {error}") from None
    if encrypted:
        raise DocumentError(f"{path.name} is encrypted")
    blank = sum(1 for page in pages if not page.strip())
    warning = (
        f"{path.name}: {blank} of {len(pages)} pages have no text (scanned images are not read)"
        if blank and blank < len(pages)
        else None
    )
    return Document(path, "\n\n".join(page.strip() for page in pages if page.strip()), warning)
