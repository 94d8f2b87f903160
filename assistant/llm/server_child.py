"""Runs llama.cpp's OpenAI-compatible server and exits as soon as its parent process is gone.

``python -m assistant.llm.server_child PARENT_PID [--idle] -- <llama_cpp.server arguments>``

The parent stops the server on every orderly exit path; this watchdog covers the disorderly
one (the parent killed with SIGKILL), so no server is ever left behind holding gigabytes.

``--idle`` runs the server at the lowest CPU priority there is (see ``lowest_priority``), set
before any of its threads exist so all of them inherit it: the background server then
computes only while the cores are free. Closing a background request's stream does not stop
the server reading its prompt (several seconds on 2 cores), and on the same cores as the
conversation's server that reading halved the speed of the reply that had asked it to give
way.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import threading
import time
from pathlib import Path

POLL_SECONDS = 0.25


def _exit_when_orphaned(parent_pid: int) -> None:
    while True:
        if os.getppid() != parent_pid:
            os._exit(0)
        time.sleep(POLL_SECONDS)


def lowest_priority() -> None:
    """SCHED_IDLE for this process and the threads it starts later (nice 19 where there is
    no SCHED_IDLE), and nice 19 for its autogroup. Lowering one's own priority needs no
    privilege."""
    if hasattr(os, "SCHED_IDLE"):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    else:
        os.nice(19)
    # With autogroup scheduling (on by default on Linux desktops, and here) the server, a
    # session of its own, is a group of its own, and groups share the cores equally whatever
    # their threads' policies: measured, the background server took one of the two cores
    # from a reply until its group was niced too. Absent on kernels without autogroup.
    with contextlib.suppress(OSError):
        Path("/proc/self/autogroup").write_text("19", encoding="ascii")


def main(argv: list[str]) -> None:
    usage = "usage: server_child PARENT_PID [--idle] -- <llama_cpp.server arguments>"
    if len(argv) < 2:
        raise SystemExit(usage)
    idle = argv[1] == "--idle"
    rest = argv[2:] if idle else argv[1:]
    if not rest or rest[0] != "--":
        raise SystemExit(usage)
    parent_pid = int(argv[0])
    if os.getppid() != parent_pid:
        raise SystemExit(0)
    if idle:
        lowest_priority()
    threading.Thread(target=_exit_when_orphaned, args=(parent_pid,), daemon=True).start()
    sys.argv = ["llama_cpp.server", *rest[1:]]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
