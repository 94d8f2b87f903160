"""`brain` for real, in tmux, as a user runs it: type a question, read the streamed answer
on the screen, open the memory screen and find the stored turn there (`tmux capture-pane`).
The service is a real `brain serve` process started by the app; its LLM is a scripted
endpoint (the real local model is exercised in test_ui.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from assistant.clients.connection import launch_environment
from assistant.config import LoadedConfig
from assistant.service.paths import OwnerLock
from tests.helpers.fake_openai import scripted_endpoint
from tests.helpers.service import action


class Tmux:
    """A tmux server of its own (so the command gets this environment, not that of a tmux
    server already running), with one window."""

    def __init__(self, command: list[str], environment: dict[str, str]) -> None:
        self.name = f"brain-test-{uuid.uuid4().hex[:8]}"
        self.tmux = ["tmux", "-L", self.name, "-f", "/dev/null"]
        subprocess.run(
            [*self.tmux, "new-session", "-d", "-s", self.name, "-x", "120", "-y", "40", *command],
            check=True,
            env=environment,
        )

    def screen(self) -> str:
        shown = subprocess.run(
            [*self.tmux, "capture-pane", "-p", "-t", self.name], capture_output=True, text=True
        )
        return shown.stdout

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.tmux, "send-keys", "-t", self.name, *keys], check=True)

    def wait_for(self, wanted: Callable[[str], bool], timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if wanted(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out; the screen was:\n{screen}")
            time.sleep(0.2)

    def running(self) -> bool:
        found = subprocess.run([*self.tmux, "has-session", "-t", self.name], capture_output=True)
        return found.returncode == 0

    def kill(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)

    def pane_pid(self) -> int:
        shown = subprocess.run(
            [*self.tmux, "list-panes", "-t", self.name, "-F", "#{pane_pid}"],
            capture_output=True,
            text=True,
            check=True,
        )
        return int(shown.stdout.split()[0])


def alive(pid: int) -> bool:
    """Running (a zombie nobody reaps in a container counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_brain_in_tmux_answers_and_shows_the_turn_in_memory(
    loaded_for: Callable[..., LoadedConfig],
) -> None:
    answer = "Noted: Aya lives in Lugano."
    with scripted_endpoint("stream", action(answer)) as (url, _):
        loaded = loaded_for(**{"llm.base_url": url, "voice.enabled": "false"})
        brain = str(Path(sys.executable).parent / "brain")
        tmux = Tmux([brain, "run"], launch_environment(loaded))
        try:
            tmux.wait_for(lambda s: " ready: " in s, 60)
            tmux.keys("My sister Aya lives in Lugano.", "Enter")
            screen = tmux.wait_for(lambda s: answer in s, 60)
            assert "My sister Aya lives in Lugano." in screen
            tmux.keys("F2")
            # Opened as the turn's records are written, the list catches up when the turn's
            # stats come.
            # The rows, their kind and the count are drawn as each part arrives: under the
            # whole suite's load the rows came before the count did.
            tmux.wait_for(
                lambda s: (
                    "User: My sister Aya lives in Lugano." in s
                    and f"Brain OS: {answer}" in s
                    and "observation" in s
                    and "of 2" in s
                ),
                30,
            )
            tmux.keys("Escape")
            tmux.wait_for(lambda s: "Type a message" in s, 10)
            tmux.keys("C-q")
            deadline = time.monotonic() + 30
            while tmux.running() and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not tmux.running(), "the app did not quit"
            assert OwnerLock(loaded.settings.data_dir).wait_free(30), "the service kept running"
        finally:
            tmux.kill()


def test_brain_ends_when_its_terminal_goes_away(
    loaded_for: Callable[..., LoadedConfig],
) -> None:
    """The window closes under the app. Through a shell that stays, as `make run` does, the
    app is not the terminal's session leader and need not get SIGHUP (here the shell ignores
    it, so the app never gets it); it used to linger, spinning on the dead terminal at half a
    core, deaf to SIGTERM."""
    with scripted_endpoint("stream", action("Hello.")) as (url, _):
        loaded = loaded_for(**{"llm.base_url": url, "voice.enabled": "false"})
        brain = str(Path(sys.executable).parent / "brain")
        tmux = Tmux(["sh", "-c", f"trap '' HUP; {brain} run; exit"], launch_environment(loaded))
        try:
            tmux.wait_for(lambda s: " ready: " in s, 60)
            children = subprocess.run(
                ["pgrep", "-P", str(tmux.pane_pid())], capture_output=True, text=True
            )
            [app] = [int(pid) for pid in children.stdout.split()]
        finally:
            tmux.kill()
        deadline = time.monotonic() + 15
        while alive(app) and time.monotonic() < deadline:
            time.sleep(0.2)
        lingered = alive(app)
        if lingered:
            os.kill(app, signal.SIGKILL)
        assert not lingered, "the app outlived its terminal"
        assert OwnerLock(loaded.settings.data_dir).wait_free(30), "the service kept running"
