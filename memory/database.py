"""Opening the LanceDB database in the user's data folder, private to the user."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import lancedb


class DatabaseError(Exception):
    """The memory database cannot be opened; the message says where and why."""


def open_database(data_dir: Path) -> Any:
    """Connect to ``data_dir/memory.lance``, creating it (mode 0700) on first use."""
    path = data_dir / "memory.lance"
    try:
        path.mkdir(parents=True, exist_ok=True)
        os.chmod(data_dir, 0o700)
        os.chmod(path, 0o700)
        return lancedb.connect(str(path))
    except OSError as error:
        raise DatabaseError(
            f"cannot open the memory database at {path}: {error.strerror}"
        ) from None
