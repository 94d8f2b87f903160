"""Records kept in one JSON file, rewritten whole on each change: a list of them (reminders,
intentions), or one state (the heartbeat's, the proactive ledger). A list that cannot be read
is moved aside (not lost) and starts empty, with one line saying so for the user; a state
that cannot be read starts afresh."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from memory.files import atomic_file

log = logging.getLogger(__name__)

Item = TypeVar("Item", bound=BaseModel)
State = TypeVar("State", bound=BaseModel)


class JsonList(Generic[Item]):
    def __init__(self, path: Path, item: type[Item], what: str) -> None:
        """``what``: the list's name in the line about an unreadable file ("reminders")."""
        self.path = path
        self._adapter = TypeAdapter(list[item])  # type: ignore[valid-type]
        self.problem: str | None = None
        self.items: list[Item] = []
        if path.exists():
            try:
                self.items = self._adapter.validate_json(path.read_bytes())
            except (ValidationError, OSError, ValueError) as error:
                aside = path.with_suffix(".json.unreadable")
                path.replace(aside)
                first = str(error).splitlines()[0]
                self.problem = f"the {what} file was unreadable ({first}); moved to {aside}"
                log.warning(self.problem)

    def save(self) -> None:
        with atomic_file(self.path, mode=0o600) as file:
            file.write(self._adapter.dump_json(self.items, indent=1).decode())


def load_state(path: Path, state: type[State], what: str) -> State:
    """The state kept at ``path``; a fresh one when there is none or it cannot be read."""
    if not path.exists():
        return state()
    try:
        return state.model_validate_json(path.read_bytes())
    except (ValidationError, OSError) as error:
        log.warning("%s was unreadable (%s); starting afresh", what, str(error).splitlines()[0])
        return state()


def save_state(path: Path, state: BaseModel) -> None:
    with atomic_file(path, mode=0o600) as file:
        file.write(state.model_dump_json())
