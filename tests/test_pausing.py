"""The background server paused while the user is at it (assistant/llm/pausing.py), by its
watchdog (assistant/llm/server_child.py), and never left paused."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from assistant.llm import server_child
from assistant.llm.messages import Message
from assistant.llm.pausing import BackgroundPause
from assistant.llm.priority import ForegroundGate
from assistant.service.llms import LLMs
from assistant.settings import Settings
from tests.conftest import REPO
from tests.test_llm import is_running, process_tree, wait_until

SLEEP = shutil.which("sleep") or "/bin/sleep"


def state(pid: int) -> str:
    """The process's state letter ("S" sleeping, "R" running, "T" stopped)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def stopped(pid: int) -> bool:
    return state(pid) in ("T", "t")


def test_a_reply_and_the_users_last_words_hold_the_pause() -> None:
    calls: list[bool] = []
    gate = ForegroundGate()
    pause = BackgroundPause(calls.append, presence_s=0.3)
    gate.listen(pause.foreground)
    with gate.foreground():
        assert calls == [True]
        with gate.foreground():  # a speculated reply inside the turn: still one pause
            pass
        assert calls == [True]
    assert calls == [True, False], "resumed when the reply ends"
    pause.user_active()
    assert calls == [True, False, True], "paused while the user types or speaks"
    time.sleep(0.1)
    pause.user_active()
    with gate.foreground():
        pass
    assert calls[-1] is True, "the user's last words still hold it after the reply"
    assert wait_until(lambda: calls[-1] is False, 2), "resumed once they stopped"
    assert len(calls) == 4
    pause.user_active()
    pause.close()
    assert calls[-1] is False and not pause.paused
    pause.user_active()
    assert calls[-1] is False, "closed: never paused again"


def test_a_reply_lets_the_background_go_on_once_its_first_sentence_is_out() -> None:
    from assistant.agent.agent import lifted_at_first_sentence

    calls: list[bool] = []
    gate = ForegroundGate()
    gate.listen(BackgroundPause(calls.append).foreground)
    shown: list[str] = []
    with gate.foreground() as hold:
        on_text = lifted_at_first_sentence(shown.append, hold)
        for piece in ("Sure", ", here", " is one", " idea."):
            on_text(piece)
        assert calls == [True], "a sentence ends only when the next begins"
        on_text(" Try a walk")
        assert calls == [True, False], "the rest of the reply shares the cores"
        on_text(" by the river. ")
        with gate.foreground():  # another reply meanwhile holds them again
            assert calls == [True, False, True]
        assert calls == [True, False, True, False]
    assert calls == [True, False, True, False]
    assert "".join(shown) == "Sure, here is one idea. Try a walk by the river. "


def test_a_reply_waiting_on_background_work_lets_it_run() -> None:
    """A turn whose window filled waits for the summary the background server writes: paused
    then, the two would wait on each other."""
    calls: list[bool] = []
    gate = ForegroundGate()
    gate.listen(BackgroundPause(calls.append).foreground)
    with gate.foreground():
        with gate.background_needed():
            assert calls == [True, False]
        assert calls == [True, False, True]
    assert calls[-1] is False
    with gate.background_needed():  # no reply under way: nothing to tell
        pass
    assert calls == [True, False, True, False]


def test_urgent_background_work_runs_while_the_user_types_but_not_during_a_reply() -> None:
    """The window's summary: every turn reads a longer prompt until it is in, so the user's
    typing does not hold it back; a reply still does."""
    calls: list[bool] = []
    gate = ForegroundGate()
    pause = BackgroundPause(calls.append, presence_s=30, urgent=lambda: gate.urgent_work)
    gate.listen(pause.foreground)
    pause.user_active()
    assert calls == [True]
    with gate.urgent():
        assert calls == [True, False], "resumed for the summary while the user types"
        pause.user_active()
        assert calls == [True, False]
        with gate.foreground():
            assert calls == [True, False, True], "a reply still pauses it"
        assert calls == [True, False, True, False]
    assert calls[-1] is True, "the user is still typing: paused again once it is done"
    pause.close()


def test_a_summary_is_urgent_work_while_it_is_written() -> None:
    from assistant.agent.compaction import CompactionStart, Compactor

    gate = ForegroundGate()
    seen: list[bool] = []

    def ask(prompt: list[Message]) -> str:
        seen.append(gate.urgent_work)
        return "Pia repaired the fence."

    compactor = Compactor(ask, gate)
    covers = ({"role": "user", "content": "I fixed the fence today."},)
    assert compactor.start(CompactionStart(previous="", covers=covers))
    assert compactor.wait(10)
    assert seen == [True] and not gate.urgent_work
    done = compactor.take()
    assert done is not None and done.summary == "Pia repaired the fence."


def test_an_urgent_request_takes_the_next_turn_at_the_background_server() -> None:
    from assistant.llm.priority import BackgroundTurns

    turns = BackgroundTurns()
    order: list[str] = []
    assert turns.acquire()  # a rating holds the server

    def wait(name: str, urgent: bool) -> None:
        assert turns.acquire(timeout=10, urgent=urgent)
        order.append(name)
        time.sleep(0.05)
        turns.release()

    waiting = [threading.Thread(target=wait, args=(f"extraction {n}", False)) for n in range(3)]
    for thread in waiting:
        thread.start()
    time.sleep(0.1)
    summary = threading.Thread(target=wait, args=("summary", True))
    summary.start()
    time.sleep(0.1)
    turns.release()
    for thread in [*waiting, summary]:
        thread.join(10)
    assert order[0] == "summary" and len(order) == 4
    assert turns.acquire(timeout=0.01), "free again"


def watched(parent_pid: int) -> subprocess.Popen[bytes]:
    """The watchdog running ``sleep`` as its server, for the parent ``parent_pid``."""
    command = [sys.executable, "-m", "assistant.llm.server_child", str(parent_pid)]
    return subprocess.Popen([*command, "--", SLEEP, "60"], cwd=REPO, start_new_session=True)


def server_under(watchdog: int) -> int:
    assert wait_until(lambda: len(process_tree(watchdog)) > 1, 10), "the server started"
    return process_tree(watchdog)[1]


def test_the_watchdog_pauses_and_resumes_its_server() -> None:
    watchdog = watched(os.getpid())
    try:
        server = server_under(watchdog.pid)
        watchdog.send_signal(server_child.PAUSE_SIGNAL)
        assert wait_until(lambda: stopped(server), 5)
        assert not stopped(watchdog.pid), "the watchdog itself keeps watching"
        watchdog.send_signal(server_child.RESUME_SIGNAL)
        assert wait_until(lambda: not stopped(server), 5)
        # Ended while paused (the app closing), it is resumed so it can exit.
        watchdog.send_signal(server_child.PAUSE_SIGNAL)
        assert wait_until(lambda: stopped(server), 5)
        watchdog.terminate()
        watchdog.wait(timeout=10)
        assert wait_until(lambda: not is_running(server), 5)
    finally:
        watchdog.kill()
        watchdog.wait()


def test_a_server_paused_when_its_app_dies_is_not_left_behind() -> None:
    """The service killed while the background server is paused: the watchdog resumes and
    ends it (a stopped process would hold its memory for ever)."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, subprocess, sys, time\n"
            "command = [sys.executable, '-m', 'assistant.llm.server_child', str(os.getpid())]\n"
            f"watchdog = subprocess.Popen([*command, '--', {SLEEP!r}, '60'])\n"
            "print(watchdog.pid, flush=True)\n"
            "time.sleep(60)\n",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        watchdog = int(holder.stdout.readline())
        server = server_under(watchdog)
        os.kill(watchdog, server_child.PAUSE_SIGNAL)
        assert wait_until(lambda: stopped(server), 5)
        holder.kill()
        holder.wait()
        assert wait_until(lambda: not is_running(server), 10), "the paused server outlived its app"
    finally:
        holder.kill()
        holder.wait()


def test_a_pause_nobody_ends_ends_by_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_child, "MAX_PAUSE_SECONDS", 2.0)
    server = subprocess.Popen([SLEEP, "60"])
    try:
        pause = server_child._Pause()
        pause.attach(server)
        pause.signal(server_child.PAUSE_SIGNAL)
        assert wait_until(lambda: stopped(server.pid), 5)
        assert wait_until(lambda: not stopped(server.pid), 5), "resumed after the longest pause"
    finally:
        server.kill()
        server.wait()


@pytest.mark.slow
def test_the_background_server_waits_out_a_reply_and_then_answers(
    fast_settings: Settings,
) -> None:
    """With the real model: while a reply is under way the background llama-server is
    stopped and the conversation's answers; a background request sent meanwhile is answered
    once the reply ends (nothing is dropped)."""
    llms = LLMs(fast_settings)
    try:
        llms.start()
        llms.start_background()
        runtime = llms.runtime
        assert runtime is not None and runtime.background_server is not None
        background_pid = process_tree(runtime.background_server.pid or 0)[-1]
        assert runtime.server is not None
        conversation_pid = process_tree(runtime.server.pid or 0)[-1]
        background = runtime.background_client
        assert background is not None
        answers: list[str] = []
        with llms.gate.foreground():
            assert wait_until(lambda: stopped(background_pid), 5)
            asked = threading.Thread(
                target=lambda: answers.append(
                    background.complete(
                        [{"role": "user", "content": "Say yes."}], max_tokens=4, temperature=0
                    )
                )
            )
            asked.start()
            reply = llms.llm.complete(
                [{"role": "user", "content": "Say hello."}], max_tokens=4, temperature=0
            )
            assert reply.strip() and not stopped(conversation_pid)
            time.sleep(1.0)
            assert not answers, "the paused server answers nothing"
        asked.join(timeout=60)
        assert answers and answers[0].strip(), "answered once the reply ended"
        assert not stopped(background_pid)
        llms.user_active()
        assert wait_until(lambda: stopped(background_pid), 5), "paused while the user types"
    finally:
        llms.close()


@pytest.mark.slow
def test_a_pause_asked_while_the_server_starts_waits_until_it_answers(
    fast_settings: Settings, tmp_path: Path
) -> None:
    """The user types while the background server is still starting: the pause must not
    reach its watchdog before Python has set its handlers (SIGUSR1 would end it, and the
    background work would fall back on the conversation's server); it is applied once the
    server answers, and lifted as usual."""
    from assistant.llm.runtime import llama_server_binary
    from assistant.llm.server import LocalLLMServer, ServerOptions
    from assistant.model_paths import ProfileModels

    binary = llama_server_binary(None)
    assert binary is not None, "the install step builds llama-server"
    server = LocalLLMServer(
        ServerOptions(
            gguf=ProfileModels(fast_settings).llm().gguf,
            model_alias="t",
            binary=binary,
            log_path=tmp_path / "server.log",
        )
    )
    started = threading.Thread(target=server.start)
    started.start()
    try:
        assert wait_until(lambda: server.pid is not None, 10)
        for _ in range(20):  # while Python in the watchdog is still starting
            server.pause(True)
            time.sleep(0.005)
        started.join(timeout=120)
        watchdog = server.pid
        assert watchdog is not None and is_running(watchdog), "the pause did not end it"
        llama = process_tree(watchdog)[-1]
        assert llama != watchdog and wait_until(lambda: stopped(llama), 5)
        server.pause(False)
        assert wait_until(lambda: not stopped(llama), 5)
    finally:
        started.join(timeout=120)
        server.stop()
