"""Files that are written whole or not at all."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO


@contextmanager
def atomic_file(
    path: Path, mode: int | None = None, check: Callable[[], None] | None = None
) -> Iterator[TextIO]:
    """A file that appears at ``path`` whole (written to a temporary file beside it, flushed to
    disk, renamed), or not at all; ``mode``: its permission bits (default: the umask's);
    ``check``: called at the last moment before the rename, what it raises leaves the file at
    ``path`` as it was (another writer's file, written meanwhile, is not replaced)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        if check is not None:
            check()
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    _fsync_folder(path.parent)


def _fsync_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
