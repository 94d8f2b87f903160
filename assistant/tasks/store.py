"""Task records on disk: one JSON file each in ``<data>/tasks``, replaced whole on every save,
so a crash mid-write leaves the previous version. Opening the store after a restart marks the
tasks that were running as interrupted."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from pydantic import ValidationError

from assistant.tasks.records import TaskRecord
from memory.files import atomic_file
from memory.records import utc_now

log = logging.getLogger(__name__)

INTERRUPTED = "interrupted: the service stopped while it ran"


class TaskStore:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._lock = threading.Lock()
        self._records: dict[str, TaskRecord] = {}
        # Task files that could not be read (moved aside, not lost), for the user.
        self.problems: list[str] = []
        folder.mkdir(parents=True, exist_ok=True)
        for path in sorted(folder.glob("t-*.json")):
            try:
                record = TaskRecord.model_validate_json(path.read_bytes())
            except (ValidationError, OSError, UnicodeDecodeError) as error:
                # Kept aside, not deleted: the user may want what it holds.
                aside = path.with_suffix(".json.unreadable")
                path.replace(aside)
                first = str(error).splitlines()[0]
                self.problems.append(
                    f"task file {path.name} was unreadable ({first}); moved to {aside}"
                )
                log.warning(self.problems[-1])
                continue
            self._records[record.id] = record

    @staticmethod
    def read(folder: Path) -> list[TaskRecord]:
        """The readable records in ``folder``, newest first, changing nothing (for listing
        while the service is not running)."""
        records = []
        for path in folder.glob("t-*.json"):
            try:
                records.append(TaskRecord.model_validate_json(path.read_bytes()))
            except (ValidationError, OSError, UnicodeDecodeError):
                continue
        return sorted(records, key=lambda r: r.created_at, reverse=True)

    def recover(self) -> list[TaskRecord]:
        """After a restart: tasks that were running or waiting for the user are failed with a
        reason and marked resumable (their goal can be run again); queued ones stay queued.
        Returns the ones it marked."""
        marked = []
        for record in self.all():
            if record.status in ("running", "waiting"):
                record.status = "failed"
                record.reason = f"{INTERRUPTED} (at step {len(record.steps) + 1})"
                record.resumable = True
                record.ended_at = record.ended_at or utc_now()
                self.save(record)
                marked.append(record)
        return marked

    def save(self, record: TaskRecord) -> None:
        with self._lock:
            self._records[record.id] = record
            with atomic_file(self.folder / f"{record.id}.json", mode=0o600) as file:
                file.write(record.model_dump_json(indent=1))

    def get(self, task_id: str) -> TaskRecord | None:
        with self._lock:
            record = self._records.get(task_id)
        return record.model_copy(deep=True) if record is not None else None

    def all(self) -> list[TaskRecord]:
        """Every task, newest first (copies: callers may change them and save)."""
        with self._lock:
            records = [r.model_copy(deep=True) for r in self._records.values()]
        return sorted(records, key=lambda r: r.created_at, reverse=True)
