"""Ratings made again in the background when the importance scale changed (new anchors or
rules, or an upgrade from the LLM rater), and for records stored while nothing rated them.
A rating the user gave is never touched. Each record is rated from its stored vector, so no
record is embedded again: 100,000 records take seconds, not an LLM's hours."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memory.importance import ImportanceScale, Rating
from memory.table import Table, in_list

log = logging.getLogger(__name__)

BATCH = 500
# Which importance scale the stored ratings were made on, in the data folder.
RATING_FILE = "importance_scale.json"


@dataclass(frozen=True)
class ImportanceRating:
    """The scale new records are rated on as they are stored, and the file (``RATING_FILE`` in
    the data folder) saying which scale the stored ratings were made on."""

    scale: ImportanceScale
    version_file: Path


class Rerating:
    """Started at once on a thread; ``pending`` counts what is left."""

    def __init__(
        self,
        records: Table,
        scale: ImportanceScale,
        apply: Callable[[Sequence[Rating]], None],
        version_file: Path,
    ) -> None:
        self._records = records
        self._scale = scale
        self._apply = apply
        self._version_file = version_file
        self._left = 0
        self._stop = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="importance-rerating", daemon=True)
        self._thread.start()

    def pending(self) -> int:
        return self._left

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        try:
            self._rerate()
        except Exception:  # the store reports its own errors; the app must keep running
            log.exception("could not rate the stored memories again")
        finally:
            self._left = 0
            self._done.set()

    def _rerate(self) -> None:
        self._scale.prepare()
        changed = self._stored_version() != self._scale.version
        states = "('pending', 'fallback', 'rated')" if changed else "('pending', 'fallback')"
        where = f"importance_state IN {states} AND deleted = false"
        ids = self._records.query(where=where, columns=["id"]).column("id").to_pylist()
        self._left = len(ids)
        if ids:
            log.info("rating %d stored memories on the importance scale", len(ids))
        for start in range(0, len(ids), BATCH):
            if self._stop.is_set():
                return
            rows = self._records.query(
                where=in_list("id", ids[start : start + BATCH]),
                columns=["id", "text", "vector", "importance", "importance_state"],
            ).to_pylist()
            ratings = [
                Rating(
                    row["id"], self._scale.rate(row["text"], np.asarray(row["vector"], np.float32))
                )
                for row in rows
            ]
            kept = {row["id"]: (row["importance"], row["importance_state"]) for row in rows}
            self._apply([r for r in ratings if kept[r.record_id] != (r.importance, "rated")])
            self._left = max(0, len(ids) - start - BATCH)
        self._version_file.write_text(json.dumps({"version": self._scale.version}))

    def _stored_version(self) -> str | None:
        try:
            version = json.loads(self._version_file.read_text()).get("version")
        except (OSError, ValueError, AttributeError):
            return None
        return version if isinstance(version, str) else None
