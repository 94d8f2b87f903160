"""The protocol package as its clients see it: it stands on its own (no memory store, no LLM),
its copies of the stores' literals stay equal to theirs, and every request it defines has one
handler in the service."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import get_args

from assistant.config import LoadedConfig
from assistant.proactive import intentions
from assistant.protocol import Request
from assistant.protocol import memory as memory_wire
from assistant.protocol import tasks as task_wire
from assistant.service.server import AssistantService
from assistant.tasks import records as task_records
from memory import records as memory_records


def test_the_terminal_app_imports_the_client_side_only() -> None:
    """The window speaks the protocol through its client: no LLM, agent, task or memory code,
    and none of what they stand on (numpy and pyarrow took a part of every window's start)."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, importlib, pkgutil, ui;"
            "[importlib.import_module(m.name) for m in pkgutil.walk_packages(ui.__path__, 'ui.')];"
            "far = ('numpy', 'pyarrow', 'lancedb', 'memory', 'voice', 'assistant.llm',"
            " 'assistant.agent', 'assistant.tasks');"
            "print(sorted(m for m in sys.modules if m.startswith(far)))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "[]"


def test_the_literals_written_out_for_clients_are_the_stores_own() -> None:
    assert get_args(memory_wire.Kind) == get_args(memory_records.Kind)
    assert get_args(memory_wire.SortKey) == get_args(memory_records.SortKey)
    assert get_args(task_wire.TaskStatus) == get_args(task_records.TaskStatus)
    assert get_args(task_wire.SubGoalStatus) == get_args(task_records.SubGoalStatus)
    assert get_args(task_wire.IntentionStatus) == get_args(intentions.Status)


def test_every_request_has_a_handler(loaded_for: Callable[..., LoadedConfig]) -> None:
    service = AssistantService(loaded_for())
    assert service.requests.kinds() == set(get_args(get_args(Request)[0]))
