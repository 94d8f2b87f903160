"""The memories a delegated task retrieved (for its goal when it started, and by its searches),
credited with utility when the task finishes well: those its output drew on gain it, as a
reply's do when the user does not correct it (assistant/agent/feedback.py). A task that
failed, gave up or was cancelled changes nothing: its end says nothing of the memories."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from assistant.agent.feedback import used_in
from assistant.tasks.records import TaskRecord
from memory.records import MemoryRecord
from memory.stream import MemoryRequestError, MemoryStream

log = logging.getLogger(__name__)


def _output(record: TaskRecord) -> str:
    """What the task put out: its result and what its calls wrote, not what it searched for
    (a query shares its words with everything it found)."""
    written = [
        str(value)
        for step in record.steps
        if not step.tool.endswith("_search")
        for value in step.arguments.values()
        if isinstance(value, str)
    ]
    return "\n".join([record.result or "", *written])


class TaskMemories:
    def __init__(self, stream: MemoryStream) -> None:
        self._stream = stream
        self._found: dict[str, MemoryRecord] = {}

    def found(self, records: Iterable[MemoryRecord]) -> None:
        """Memories the task was shown."""
        self._found.update((record.id, record) for record in records)

    def settle(self, record: TaskRecord) -> None:
        """The task ended: if it is done, the memories its output drew on gain utility."""
        if record.status != "done" or not self._found:
            return
        used = used_in(_output(record), record.goal, self._found.values())
        if not used:
            return
        try:
            self._stream.adjust_utility(used, helped=True)
        except (ValueError, MemoryRequestError, OSError) as error:
            log.warning("task %s: could not credit its memories: %s", record.id, error)
