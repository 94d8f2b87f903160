"""Runs llama.cpp's OpenAI-compatible server and exits as soon as its parent process is gone.

``python -m assistant.llm.server_child PARENT_PID -- <llama_cpp.server arguments>``

The parent stops the server on every orderly exit path; this watchdog covers the disorderly
one (the parent killed with SIGKILL), so no server is ever left behind holding gigabytes.
"""

from __future__ import annotations

import os
import runpy
import sys
import threading
import time

POLL_SECONDS = 0.25


def _exit_when_orphaned(parent_pid: int) -> None:
    while True:
        if os.getppid() != parent_pid:
            os._exit(0)
        time.sleep(POLL_SECONDS)


def main(argv: list[str]) -> None:
    if len(argv) < 2 or argv[1] != "--":
        raise SystemExit("usage: server_child PARENT_PID -- <llama_cpp.server arguments>")
    parent_pid = int(argv[0])
    if os.getppid() != parent_pid:
        raise SystemExit(0)
    threading.Thread(target=_exit_when_orphaned, args=(parent_pid,), daemon=True).start()
    sys.argv = ["llama_cpp.server", *argv[2:]]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
