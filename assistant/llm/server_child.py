"""Runs the local LLM server and exits as soon as its parent process is gone.

``python -m assistant.llm.server_child PARENT_PID [--idle] -- <server command or arguments>``

After ``--`` comes either a command to run (llama.cpp's own ``llama-server`` binary and its
arguments: the first word is an absolute path), or the arguments of llama-cpp-python's server,
which then runs in this process.

The parent stops the server on every orderly exit path; this watchdog covers the disorderly
one (the parent killed with SIGKILL), so no server is ever left behind holding gigabytes.

SIGUSR1 pauses llama-server (SIGSTOP) and SIGUSR2 resumes it (SIGCONT): the service pauses
the background server while the user speaks or types and while a reply is written, so nothing
in it shares a core with the turn. The pause is the watchdog's to keep, not the service's: a
pause held longer than ``MAX_PAUSE_SECONDS`` ends by itself (a service stuck or gone must not
leave a server frozen), and a server ended while paused is resumed first, so it exits.

``--idle`` runs the server at the lowest CPU priority there is (see ``lowest_priority``), set
before any of its threads or its process exist so all of them inherit it: the background
server then computes only while the cores are free. Closing a background request's stream does
not stop the server reading its prompt (several seconds on 2 cores), and on the same cores as
the conversation's server that reading halved the speed of the reply that had asked it to give
way.
"""

from __future__ import annotations

import contextlib
import os
import queue
import runpy
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

POLL_SECONDS = 0.25
# How long the server gets to exit on SIGTERM once the parent is gone, before SIGKILL.
ORPHAN_GRACE_SECONDS = 2.0
# The longest a pause lasts if the parent never ends it (a reply runs a minute at most).
MAX_PAUSE_SECONDS = 120.0
PAUSE_SIGNAL = signal.SIGUSR1
RESUME_SIGNAL = signal.SIGUSR2


def lowest_priority() -> None:
    """SCHED_IDLE for this process and the threads and processes it starts later (nice 19
    where there is no SCHED_IDLE), and nice 19 for its autogroup. Lowering one's own priority
    needs no privilege."""
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


def _watch_parent(parent_pid: int, on_orphaned: Callable[[], None]) -> None:
    while os.getppid() == parent_pid:
        time.sleep(POLL_SECONDS)
    on_orphaned()
    os._exit(0)


class _Pause:
    """The server's pause: SIGSTOP on ``PAUSE_SIGNAL``, SIGCONT on ``RESUME_SIGNAL`` or after
    ``MAX_PAUSE_SECONDS``. The signal handlers only queue the signal (``SimpleQueue.put`` is
    safe in one); a thread of its own acts on them in order."""

    def __init__(self) -> None:
        self._server: subprocess.Popen[bytes] | None = None
        self._signals: queue.SimpleQueue[int] = queue.SimpleQueue()

    def attach(self, server: subprocess.Popen[bytes]) -> None:
        """Act on the signals, those that came before ``server`` started too."""
        self._server = server
        threading.Thread(target=self._run, name="pause", daemon=True).start()

    def signal(self, signum: int, _frame: object = None) -> None:
        self._signals.put(signum)

    def release(self) -> None:
        self._send(signal.SIGCONT)

    def _run(self) -> None:
        paused_until: float | None = None
        while True:
            wait = None if paused_until is None else max(paused_until - time.monotonic(), 0)
            try:
                signum = self._signals.get(timeout=wait)
            except queue.Empty:
                signum = RESUME_SIGNAL
            if signum == PAUSE_SIGNAL:
                paused_until = time.monotonic() + MAX_PAUSE_SECONDS
                self._send(signal.SIGSTOP)
            else:
                paused_until = None
                self._send(signal.SIGCONT)

    def _send(self, signum: int) -> None:
        if self._server is not None:
            with contextlib.suppress(ProcessLookupError):
                self._server.send_signal(signum)


def _run_binary(command: list[str], parent_pid: int) -> int:
    """Run llama-server as this process's child (same session, so same autogroup and
    priority); end it when the parent goes, pass SIGTERM and SIGINT on, pause and resume it
    on SIGUSR1 and SIGUSR2, return its code."""
    pause = _Pause()
    signal.signal(PAUSE_SIGNAL, pause.signal)
    signal.signal(RESUME_SIGNAL, pause.signal)
    server = subprocess.Popen(command, stdin=subprocess.DEVNULL)
    pause.attach(server)

    def end_server() -> None:
        pause.release()  # a stopped process does not act on SIGTERM
        with contextlib.suppress(ProcessLookupError):
            server.terminate()
        try:
            server.wait(ORPHAN_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            server.kill()

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            server.send_signal(signum)
        pause.release()

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    threading.Thread(target=_watch_parent, args=(parent_pid, end_server), daemon=True).start()
    return server.wait()


def main(argv: list[str]) -> None:
    usage = "usage: server_child PARENT_PID [--idle] -- <server command or arguments>"
    if len(argv) < 2:
        raise SystemExit(usage)
    idle = argv[1] == "--idle"
    rest = argv[2:] if idle else argv[1:]
    if not rest or rest[0] != "--" or len(rest) < 2:
        raise SystemExit(usage)
    parent_pid = int(argv[0])
    # Until a server that can be paused runs, a pause is ignored (SIGUSR1 would end us).
    for signum in (PAUSE_SIGNAL, RESUME_SIGNAL):
        signal.signal(signum, signal.SIG_IGN)
    if os.getppid() != parent_pid:
        raise SystemExit(0)
    if idle:
        lowest_priority()
    server_arguments = rest[1:]
    if os.path.isabs(server_arguments[0]):
        raise SystemExit(_run_binary(server_arguments, parent_pid))
    threading.Thread(target=_watch_parent, args=(parent_pid, lambda: None), daemon=True).start()
    sys.argv = ["llama_cpp.server", *server_arguments]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
