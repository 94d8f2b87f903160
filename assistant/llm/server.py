"""The local llama.cpp server: started on a free loopback port, supervised, always stopped.

Two servers can run the same GGUF: llama.cpp's own C++ ``llama-server`` (built in the install
step; the default), or llama-cpp-python's Python server (``llm.server``, or where the binary is
missing). Only ``llama-server`` reuses cached prompt chunks after a change (``--cache-reuse``)
and saves a slot's KV cache to disk (``slot_dir``).

Start-up waits until the server answers through the ``openai`` client. A supervisor thread
restarts a server that dies on its own (up to ``max_restarts`` times). ``stop`` is idempotent
and also runs from ``atexit``; the child watches its parent, so SIGKILL of the app leaves no
server behind either.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import IO

import openai

from assistant.llm.server_child import PAUSE_SIGNAL, RESUME_SIGNAL

HOST = "127.0.0.1"
# An idle server exits on SIGTERM in about 0.4 s; one still writing a reply (a background
# request abandoned at shutdown) waits for the reply's end, seconds more. It keeps no state,
# so after this long it is killed.
STOP_GRACE_SECONDS = 1.0
LOG_TAIL_LINES = 8


class LLMServerError(Exception):
    """The local server could not be started or kept running."""


class ServerState(Enum):
    STARTING = "starting"
    READY = "ready"
    RESTARTING = "restarting"
    STOPPED = "stopped"
    FAILED = "failed"


@dataclass(frozen=True)
class ServerStatus:
    state: ServerState
    message: str


StatusCallback = Callable[[ServerStatus], None]

_live_servers: set[LocalLLMServer] = set()
_live_lock = threading.Lock()


def stop_all_servers() -> None:
    """Stop every server this process started (atexit and signal paths call this)."""
    with _live_lock:
        servers = list(_live_servers)
    for server in servers:
        server.stop()


atexit.register(stop_all_servers)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass(frozen=True)
class ServerOptions:
    gguf: Path
    model_alias: str
    context_window: int = 4096
    threads: int = 2
    startup_timeout_s: float = 180.0
    max_restarts: int = 3
    log_path: Path | None = None
    # Compute only while the cores are free (server_child's --idle): for background work.
    idle_priority: bool = False
    # llama.cpp's llama-server binary; None: llama-cpp-python's server.
    binary: Path | None = None
    # llama-server only: where slots' KV caches are saved and restored (None: not at all).
    slot_dir: Path | None = None
    # llama-server only: the smallest run of cached tokens worth shifting into place after a
    # change in the prompt (0: reuse the common prefix only).
    cache_reuse: int = 256
    # llama-server only: how the KV cache stores keys and values (f16, q8_0, ...).
    kv_cache_type: str = "f16"
    # llama-server only: tokens drafted from the prompt after the last 3 written (0: none).
    lookup_draft: int = 4

    @property
    def server_name(self) -> str:
        return "llama-server" if self.binary is not None else "llama-cpp-python"


class LocalLLMServer:
    def __init__(self, options: ServerOptions, on_status: StatusCallback | None = None) -> None:
        self.options = options
        self._on_status = on_status
        self._process: subprocess.Popen[bytes] | None = None
        self._port = 0
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._restarts = 0
        self._supervisor: threading.Thread | None = None
        # Whether the server answers (its watchdog then handles the pause signals: before
        # Python has set its handlers, SIGUSR1 would end it), and whether it is to be paused.
        self._answering = False
        self._paused = False

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self._port}/v1"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self) -> str:
        """Start the server and wait until it answers; return its base URL. Once stopped, a
        server object stays stopped (a stop racing a start must win); make a new one."""
        if not self.options.gguf.exists():
            raise LLMServerError(f"model file {self.options.gguf} does not exist")
        if self.options.slot_dir is not None:
            self.options.slot_dir.mkdir(parents=True, exist_ok=True)
        with _live_lock:
            _live_servers.add(self)
        self._launch(fresh_port=True)
        self._wait_until_ready()
        self._supervisor = threading.Thread(
            target=self._supervise, name="llm-server-supervisor", daemon=True
        )
        self._supervisor.start()
        return self.base_url

    def pause(self, paused: bool) -> None:
        """Pause (SIGSTOP) or resume llama-server, through its watchdog (server_child): a
        paused server takes no core, and resumes by itself if never told to. llama-cpp-python's
        server, run in the watchdog's own process, is not paused."""
        with self._lock:
            self._paused = paused
            process = self._process if self._answering else None
        self._signal_pause(process, paused)

    def _signal_pause(self, process: subprocess.Popen[bytes] | None, paused: bool) -> None:
        """Tell the watchdog (only once the server answers: see ``_answering``)."""
        if process is None or self.options.binary is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, PAUSE_SIGNAL if paused else RESUME_SIGNAL)

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            process = self._process
            self._process = None
        if process is not None:
            _terminate(process)
            self._notify(ServerState.STOPPED, "LLM server stopped")
        with _live_lock:
            _live_servers.discard(self)

    def __enter__(self) -> LocalLLMServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _command(self) -> list[str]:
        options = self.options
        return [
            sys.executable,
            "-m",
            "assistant.llm.server_child",
            str(os.getpid()),
            *(["--idle"] if options.idle_priority else []),
            "--",
            *(self._llama_server_arguments() if options.binary else self._python_arguments()),
        ]

    def _llama_server_arguments(self) -> list[str]:
        options = self.options
        assert options.binary is not None
        slots = ["--slot-save-path", str(options.slot_dir)] if options.slot_dir else []
        return [
            str(options.binary.resolve()),
            "--model",
            str(options.gguf),
            "--alias",
            options.model_alias,
            "--host",
            HOST,
            "--port",
            str(self._port),
            "--ctx-size",
            str(options.context_window),
            "--threads",
            str(options.threads),
            "--threads-batch",
            str(options.threads),
            # One conversation a server: one slot, holding the whole window.
            "--parallel",
            "1",
            "--cache-reuse",
            str(options.cache_reuse),
            # No prompt cache in RAM. It keeps copies of a slot's KV cache to switch between
            # conversations (up to 8 GiB a server by default): every prompt that keeps less
            # than half of the slot, as each compaction's does, saves a copy of the whole slot
            # (5 in a 40-turn run of benchmarks/turn.py). One conversation a server has
            # nothing to switch to, and a restart reads the slot file (slots.py).
            "--cache-ram",
            "0",
            "--cache-type-k",
            options.kv_cache_type,
            "--cache-type-v",
            options.kv_cache_type,
            # Measured on 2 cores (docs/BENCHMARKS.md): with flash attention a turn's first
            # token came 0.4 s after its request instead of 0.2 s, and replies were written
            # at 21 tokens/s instead of 27; only a cold read of a whole prompt was faster.
            # A quantized V cache needs it.
            "--flash-attn",
            "off" if options.kv_cache_type == "f16" else "on",
            # The GGUF's chat template through llama-server's Jinja engine (its default) renders
            # our prompts otherwise than the ChatML that llama-cpp-python's server writes and
            # that the agents' prompts were tuned on: with it the 1.5B sub-agent finished
            # without writing its note (tests/test_tasks_real.py), without it it wrote it.
            # Native tool calls, the one thing that needs it, go to other endpoints.
            "--no-jinja",
            "--no-webui",
            *self._lookup_arguments(),
            *slots,
        ]

    def _lookup_arguments(self) -> list[str]:
        """Prompt-lookup decoding: after the last 3 tokens written, the ``lookup_draft`` that
        followed them earlier in the prompt are checked in one batch. A reply opens with the
        same `{"message": "` as every action in the history, and repeats names and words from
        the prompt; the draft is exact (a token is kept only if sampling chose it). On 2 cores
        the first word came ~90 ms sooner on the 0.5B model and ~135 ms on the 1.5B, longer
        replies no slower (docs/BENCHMARKS.md, benchmarks/lookup_decoding.py)."""
        draft = self.options.lookup_draft
        if not draft:
            return []
        return [
            "--spec-type",
            "ngram-simple",
            "--spec-ngram-simple-size-n",
            "3",
            "--spec-ngram-simple-size-m",
            str(draft),
        ]

    def _python_arguments(self) -> list[str]:
        options = self.options
        return [
            "--model",
            str(options.gguf),
            "--model_alias",
            options.model_alias,
            "--host",
            HOST,
            "--port",
            str(self._port),
            "--n_ctx",
            str(options.context_window),
            "--n_threads",
            str(options.threads),
            "--n_threads_batch",
            str(options.threads),
        ]

    def _launch(self, fresh_port: bool) -> None:
        if fresh_port or not self._port:
            self._port = free_port()
        log = self._open_log()
        self._notify(ServerState.STARTING, f"starting LLM server ({self.options.model_alias})")
        with self._lock:
            if self._stopping.is_set():
                # stop() ran meanwhile: starting now would leave a server nobody stops.
                if not isinstance(log, int):
                    log.close()
                raise LLMServerError("LLM server was stopped while starting")
            self._answering = False
            # A new session: the terminal's Ctrl-C reaches only the app, which stops us in order.
            self._process = subprocess.Popen(
                self._command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        if not isinstance(log, int):
            log.close()

    def _open_log(self) -> IO[bytes] | int:
        if self.options.log_path is None:
            return subprocess.DEVNULL
        self.options.log_path.parent.mkdir(parents=True, exist_ok=True)
        return self.options.log_path.open("ab")

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.options.startup_timeout_s
        client = openai.OpenAI(base_url=self.base_url, api_key="local", max_retries=0, timeout=2.0)
        try:
            while time.monotonic() < deadline:
                process = self._process
                if process is None or self._stopping.is_set():
                    raise LLMServerError("LLM server was stopped while starting")
                if process.poll() is not None:
                    raise LLMServerError(
                        f"LLM server exited with code {process.returncode} while starting"
                        f"{self._log_tail()}"
                    )
                try:
                    client.models.list()
                except openai.APIError:
                    time.sleep(0.2)
                    continue
                with self._lock:
                    self._answering = True
                    paused = self._paused
                if paused:  # asked while it started
                    self._signal_pause(process, True)
                self._notify(ServerState.READY, f"LLM server ready at {self.base_url}")
                return
        finally:
            client.close()
        self.stop()
        raise LLMServerError(
            f"LLM server did not answer within {self.options.startup_timeout_s:.0f} s"
            f"{self._log_tail()}"
        )

    def _supervise(self) -> None:
        while not self._stopping.is_set():
            process = self._process
            if process is None:
                return
            process.wait()
            if self._stopping.is_set():
                return
            if self._restarts >= self.options.max_restarts:
                self._notify(
                    ServerState.FAILED,
                    f"LLM server died (exit code {process.returncode}) and was restarted "
                    f"{self._restarts} times; giving up{self._log_tail()}",
                )
                return
            self._restarts += 1
            self._notify(
                ServerState.RESTARTING,
                f"LLM server died (exit code {process.returncode}); restarting "
                f"({self._restarts}/{self.options.max_restarts})",
            )
            try:
                self._launch(fresh_port=False)
                self._wait_until_ready()
            except LLMServerError as error:
                self._notify(ServerState.FAILED, str(error))
                return

    def _log_tail(self) -> str:
        path = self.options.log_path
        if path is None or not path.exists():
            return ""
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        tail = [line for line in lines[-LOG_TAIL_LINES:] if line.strip()]
        return (f"; last log lines ({path}): " + " | ".join(tail)) if tail else ""

    def _notify(self, state: ServerState, message: str) -> None:
        if self._on_status is not None:
            self._on_status(ServerStatus(state, message))


def _terminate(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after the grace period, to the server's whole process group (it
    is a session of its own: the watchdog and llama-server beneath it)."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=STOP_GRACE_SECONDS)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
