"""The LLM through the openai client: the real local server, its lifecycle, endpoint failures."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from assistant.agent.context import SUMMARY_HEAD, ahead_of_a_turn
from assistant.llm.client import (
    Endpoint,
    LLMCancelled,
    LLMClient,
    LLMContextOverflow,
    LLMReplyError,
    LLMUnavailable,
)
from assistant.llm.messages import Message, ToolCall
from assistant.llm.priority import BackgroundLLM, ForegroundGate
from assistant.llm.runtime import LLMRuntime
from assistant.llm.server import LocalLLMServer, ServerOptions, ServerState, ServerStatus
from assistant.llm.switch import SwitchableLLM
from assistant.model_paths import ProfileModels
from assistant.service.llms import LLMs
from assistant.settings import Settings
from tests.conftest import REPO, make_settings
from tests.helpers.fake_openai import scripted_endpoint

RATING_SCHEMA = {
    "type": "object",
    "properties": {"rating": {"type": "integer"}},
    "required": ["rating"],
}

SUM_SCHEMA = {
    "type": "object",
    "properties": {
        "sum": {"type": "integer"},
        "words": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["sum", "words"],
}


def is_running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie may linger if nobody reaps it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def wait_until(condition: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def port_open(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def server_children() -> list[int]:
    """Pids of LLM server processes whose parent is this test process."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
            continue
        if b"assistant.llm.server_child" in cmdline and ppid == os.getpid():
            found.append(int(entry.name))
    return found


@pytest.fixture(scope="module")
def fast_gguf(fast_settings: Settings) -> Path:
    return ProfileModels(fast_settings).llm().gguf


@pytest.mark.slow
def test_local_server_answers_plain_streamed_and_schema_json(fast_llm: LLMClient) -> None:
    assert fast_llm.endpoint.is_local and fast_llm.endpoint.base_url.startswith("http://127.0.0.1:")
    assert fast_llm.ping() == [fast_llm.endpoint.model]
    plain = fast_llm.complete(
        [{"role": "user", "content": "What is the capital of France? One word."}], max_tokens=8
    )
    assert "paris" in plain.lower()
    pieces = list(
        fast_llm.stream([{"role": "user", "content": "List three colours."}], max_tokens=32)
    )
    assert len(pieces) > 3 and "".join(pieces).strip()
    answer = fast_llm.complete_json(
        [{"role": "user", "content": "Add 2 and 3. Give the sum and the numbers as words."}],
        SUM_SCHEMA,
        max_tokens=48,
    )
    assert isinstance(answer["sum"], int) and isinstance(answer["words"], list)


def watched_server(gguf: Path, tmp_path: Path) -> tuple[LocalLLMServer, list[ServerStatus]]:
    """A server on the fast model, with the statuses it reports collected in a list."""
    statuses: list[ServerStatus] = []
    server = LocalLLMServer(
        ServerOptions(gguf=gguf, model_alias="t", log_path=tmp_path / "server.log"),
        on_status=statuses.append,
    )
    return server, statuses


@pytest.mark.slow
def test_stop_ends_the_server_and_frees_its_port(fast_gguf: Path, tmp_path: Path) -> None:
    server, statuses = watched_server(fast_gguf, tmp_path)
    with server:
        pid, port = server.pid, int(server.base_url.split(":")[2].split("/")[0])
        assert pid is not None and is_running(pid) and port_open(port)
    assert not is_running(pid)
    assert not port_open(port)
    assert [s.state for s in statuses] == [
        ServerState.STARTING,
        ServerState.READY,
        ServerState.STOPPED,
    ]


@pytest.mark.slow
def test_a_crashed_server_is_restarted(fast_gguf: Path, tmp_path: Path) -> None:
    server, statuses = watched_server(fast_gguf, tmp_path)
    with server:
        first = server.pid
        assert first is not None
        os.kill(first, signal.SIGKILL)
        assert wait_until(
            lambda: statuses[-1].state == ServerState.READY and server.pid != first, 120
        )
        client = LLMClient(Endpoint(server.base_url, "t", is_local=True))
        assert client.complete([{"role": "user", "content": "Say hi."}], max_tokens=4)
        client.close()
    assert ServerState.RESTARTING in [s.state for s in statuses]


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL, signal.SIGHUP])
def test_killing_the_app_leaves_no_server_behind(fast_gguf: Path, signum: int) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-m", "tests.helpers.hold_llm_server", str(fast_gguf)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        server_pid = int(holder.stdout.readline())
        assert is_running(server_pid)
        holder.send_signal(signum)
        holder.wait(timeout=30)
        assert wait_until(lambda: not is_running(server_pid), 15), "the server outlived its app"
    finally:
        holder.kill()
        holder.wait()


def test_an_external_endpoint_starts_nothing(tmp_path: Path) -> None:
    with scripted_endpoint("ok", "hello from elsewhere") as (url, endpoint):
        settings = make_settings(
            "quality",
            tmp_path / "data",
            tmp_path / "cache",
            **{"llm.base_url": url, "llm.model": "m"},
        )
        runtime = LLMRuntime(settings)
        servers_before = server_children()
        with runtime as client:
            assert runtime.server is None and server_children() == servers_before
            assert client.complete([{"role": "user", "content": "hi"}]) == "hello from elsewhere"
            assert "".join(client.stream([{"role": "user", "content": "hi"}])).split() == [
                "hello",
                "from",
                "elsewhere",
            ]
            assert runtime.start_background() is client, "an endpoint takes both kinds of work"
            assert runtime.background_server is None
        assert endpoint.requests[0]["model"] == "m"
    assert not (tmp_path / "cache" / "qwen2.5-coder-1.5b-instruct-q4_k_m").exists()


@pytest.mark.slow
def test_background_work_gets_its_own_local_server(fast_settings: Settings) -> None:
    runtime = LLMRuntime(fast_settings)
    servers_before = server_children()
    with runtime as client:
        background = runtime.start_background()
        assert runtime.start_background() is background, "started once"
        assert background.endpoint.base_url != client.endpoint.base_url
        assert background.endpoint.is_local and background.tool_calling == "json_action"
        assert len(server_children()) == len(servers_before) + 2
        rating = background.complete_json(
            [{"role": "user", "content": "Rate 1-10 how important: buying milk."}],
            RATING_SCHEMA,
            max_tokens=16,
        )
        assert isinstance(rating["rating"], int)
        # Every thread of the background server computes only while the cores are free; the
        # conversation's server keeps the normal priority.
        assert runtime.background_server is not None and runtime.server is not None
        assert thread_policies(runtime.background_server.pid) == {os.SCHED_IDLE}
        assert thread_policies(runtime.server.pid) == {os.SCHED_OTHER}
        # Each server is a session, so an autogroup, of its own: the group yields too.
        for process in process_tree(runtime.background_server.pid or 0):
            assert autogroup_nice(process) in (19, None)
        for process in process_tree(runtime.server.pid or 0):
            assert autogroup_nice(process) in (0, None)
    assert server_children() == servers_before, "both servers stop with the runtime"


def test_a_request_on_a_closed_client_fails_as_an_unavailable_llm() -> None:
    """Background work (a summary's read-ahead) may still hold the client of an LLM that was
    stopped or switched; its request fails the way an unreachable LLM does."""
    with scripted_endpoint("ok") as (url, _):
        client = LLMClient(Endpoint(url, "m", is_local=False))
        client.close()
        with pytest.raises(LLMUnavailable, match="closed"):
            client.complete([{"role": "user", "content": "hi"}])
        with pytest.raises(LLMUnavailable, match="closed"):
            "".join(client.stream([{"role": "user", "content": "hi"}]))


def test_a_request_waits_for_a_client_that_is_coming() -> None:
    switch = SwitchableLLM()
    client = LLMClient(Endpoint("http://127.0.0.1:9/v1", "m", is_local=False))
    switch.coming("the background LLM server is starting", wait_s=30)
    got: list[LLMClient] = []
    waiting = threading.Thread(target=lambda: got.append(switch.current()))
    waiting.start()
    waiting.join(0.3)
    assert waiting.is_alive() and not got, "no client yet: the request waits"
    switch.use(client)
    waiting.join(5)
    assert got == [client]
    # Not forever: past the wait it fails with the reason, as an unavailable LLM does.
    switch.coming("the background LLM server is starting", wait_s=0.2)
    with pytest.raises(LLMUnavailable, match="background LLM server is starting"):
        switch.current()
    # And a cancelled request stops waiting at once.
    switch.coming("starting", wait_s=30)
    cancel = threading.Event()
    cancel.set()
    started = time.monotonic()
    with pytest.raises(LLMCancelled):
        switch.current(cancel)
    assert time.monotonic() - started < 1
    switch.unavailable("the LLM is unavailable: down")
    with pytest.raises(LLMUnavailable, match="down"):
        switch.current()


@pytest.mark.slow
def test_background_work_waits_for_its_own_server_while_it_starts(
    tmp_path: Path, session_cache: Path
) -> None:
    """Measured by hand: a day plan written on the conversation's server while the background
    one was starting made the next (spoken) turn read its whole prompt again, 17 s."""
    host = LLMs(make_settings("fast", tmp_path / "data", session_cache))
    try:
        host.start()
        assert host.runtime is not None and host.runtime.server is not None
        background = BackgroundLLM(host.background, host.gate)
        answers: list[dict[str, object]] = []
        prompt: list[Message] = [{"role": "user", "content": "Rate 1-10: buying milk."}]
        request = threading.Thread(
            target=lambda: answers.append(
                background.complete_json(prompt, RATING_SCHEMA, max_tokens=16)
            )
        )
        request.start()
        request.join(2)
        assert request.is_alive() and not answers, "not on the conversation's server"
        host.start_background()
        request.join(120)
        assert answers and isinstance(answers[0]["rating"], int)
        assert host.background.client is host.runtime.background_client
        assert host.background.client is not host.llm.client
    finally:
        host.close()


def autogroup_nice(pid: int | None) -> int | None:
    """The nice value of the process's autogroup ("/autogroup-40 nice 19"); None where the
    kernel has no autogroups."""
    try:
        return int(Path(f"/proc/{pid}/autogroup").read_text().split()[-1])
    except FileNotFoundError:
        return None


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process beneath it."""
    tree, index = [pid], 0
    while index < len(tree):
        for task in os.listdir(f"/proc/{tree[index]}/task"):
            children = Path(f"/proc/{tree[index]}/task/{task}/children").read_text().split()
            tree += [int(child) for child in children]
        index += 1
    return tree


def thread_policies(pid: int | None) -> set[int]:
    """The scheduling policy of each thread of the server's processes (the watchdog and
    llama-server beneath it, llama.cpp's workers included)."""
    assert pid is not None
    threads = [
        int(tid) for process in process_tree(pid) for tid in os.listdir(f"/proc/{process}/task")
    ]
    assert len(threads) > 2
    return {os.sched_getscheduler(tid) for tid in threads}


def test_external_endpoint_gets_json_schema_format(tmp_path: Path) -> None:
    with scripted_endpoint("ok", '{"sum": 5, "words": ["two", "three"]}') as (url, endpoint):
        client = LLMClient(Endpoint(url, "m"))
        assert client.complete_json([{"role": "user", "content": "2+3"}], SUM_SCHEMA)["sum"] == 5
        response_format = endpoint.requests[0]["response_format"]
        assert isinstance(response_format, dict) and response_format["type"] == "json_schema"


def test_a_message_that_made_a_tool_call_is_sent_as_the_api_has_it() -> None:
    """A typed message goes out as the JSON the chat-completions API takes, its tool call
    and the answer to it included."""
    call: ToolCall = {
        "id": "call-1",
        "type": "function",
        "function": {"name": "recall_search", "arguments": '{"query": "Parma"}'},
    }
    messages: list[Message] = [
        {"role": "user", "content": "What did I say about Parma?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": "Brigida lives in Parma.", "tool_call_id": "call-1"},
    ]
    with scripted_endpoint("ok", "She lives there.") as (url, endpoint):
        assert LLMClient(Endpoint(url, "m")).complete(messages) == "She lives there."
    assert endpoint.requests[0]["messages"] == messages


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_unreachable_endpoint_is_one_clear_message() -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    client = LLMClient(Endpoint(url, "m"), timeout_s=2)
    with pytest.raises(LLMUnavailable) as raised:
        client.complete([{"role": "user", "content": "hi"}])
    assert str(raised.value).startswith(f"cannot reach the LLM at {url}")
    assert "\n" not in str(raised.value)
    with pytest.raises(LLMUnavailable):
        list(client.stream([{"role": "user", "content": "hi"}]))


@pytest.mark.parametrize(
    ("behaviour", "expected"),
    [
        ("error500", "answered HTTP 500: model crashed"),
        ("slow", "did not answer within 1 s"),
    ],
)
def test_endpoint_failures_are_one_clear_message(behaviour: str, expected: str) -> None:
    with scripted_endpoint(behaviour) as (url, _):  # type: ignore[arg-type]
        client = LLMClient(Endpoint(url, "m"), timeout_s=1)
        with pytest.raises(LLMUnavailable, match=expected):
            client.complete([{"role": "user", "content": "hi"}])


def test_malformed_json_reply_is_a_reply_error() -> None:
    with scripted_endpoint("not_json") as (url, _):
        client = LLMClient(Endpoint(url, "m"))
        with pytest.raises(LLMReplyError, match="did not reply with valid JSON"):
            client.complete_json([{"role": "user", "content": "hi"}], SUM_SCHEMA)


def test_cli_doctor_with_a_dead_endpoint_names_the_part(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    environ = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "HF_HUB_OFFLINE": "1",
        "BRAIN_DATA_DIR": str(tmp_path / "data"),
        "BRAIN_CACHE_DIR": str(tmp_path / "cache"),
        "BRAIN_CONFIG": str(tmp_path / "none.toml"),
    }
    (tmp_path / "none.toml").write_text("")
    result = subprocess.run(
        [sys.executable, "-m", "assistant.cli", "doctor", "--profile", "fast", "--llm-url", url],
        capture_output=True,
        text=True,
        env=environ,
        cwd=REPO,
        timeout=300,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    assert "FAIL llm" in result.stdout and f"cannot reach the LLM at {url}" in result.stdout
    assert "brain doctor: FAILED: llm" in result.stdout


def test_a_background_request_gives_way_to_a_reply_and_is_asked_again() -> None:
    reply = json.dumps({"importance": 3, "why": " ".join(["because"] * 12)})
    with scripted_endpoint("slow_stream", reply) as (url, endpoint):
        gate = ForegroundGate()
        background = BackgroundLLM(LLMClient(Endpoint(url, "scripted")), gate)
        result: dict[str, object] = {}
        worker = threading.Thread(
            target=lambda: result.update(background.complete_json([], {"type": "object"}))
        )
        worker.start()
        deadline = time.monotonic() + 10
        while not endpoint.requests and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)  # the rating is being written (it takes about 2 s)
        with gate.foreground():
            time.sleep(0.5)  # a reply is being written
            assert worker.is_alive() and len(endpoint.requests) == 1
        worker.join(15)
    assert result == json.loads(reply)
    assert len(endpoint.requests) == 2, "abandoned when the reply started, asked again after"
    assert endpoint.closed_early == 1, "the abandoned request's stream was closed"


def test_background_work_on_idle_cores_goes_on_through_a_reply() -> None:
    """On a server that computes only on idle cores a request cannot slow a reply: it starts
    while one is written and is not abandoned for it (a summary of the window would otherwise
    start over at every turn and never end)."""
    reply = json.dumps({"summary": " ".join(["words"] * 12)})
    with scripted_endpoint("slow_stream", reply) as (url, endpoint):
        gate = ForegroundGate()
        background = BackgroundLLM(LLMClient(Endpoint(url, "scripted")), gate, lambda: True)
        result: dict[str, object] = {}
        with gate.foreground():  # a reply is being written from start to end
            worker = threading.Thread(
                target=lambda: result.update(background.complete_json([], {"type": "object"}))
            )
            worker.start()
            worker.join(15)
    assert result == json.loads(reply)
    assert len(endpoint.requests) == 1 and endpoint.closed_early == 0


def test_closing_the_gate_abandons_background_work_at_once_and_for_good() -> None:
    reply = json.dumps({"importance": 3, "why": " ".join(["because"] * 40)})
    with scripted_endpoint("slow_stream", reply) as (url, endpoint):
        gate = ForegroundGate()
        background = BackgroundLLM(LLMClient(Endpoint(url, "scripted")), gate)
        threading.Timer(0.3, gate.close).start()
        started = time.monotonic()
        with pytest.raises(LLMCancelled):
            background.complete_json([], {"type": "object"})
        assert time.monotonic() - started < 3, "well before the 6 s the reply would take"
        with pytest.raises(LLMCancelled):
            background.complete_json([], {"type": "object"})
    assert len(endpoint.requests) == 1, "abandoned, not asked again, and nothing new is sent"


def test_cancelling_a_structured_request_raises_at_once() -> None:
    with scripted_endpoint("slow_stream", json.dumps({"a": " ".join(["x"] * 40)})) as (url, _):
        cancel = threading.Event()
        threading.Timer(0.3, cancel.set).start()
        started = time.monotonic()
        with pytest.raises(LLMCancelled, match="cancelled"):
            LLMClient(Endpoint(url, "scripted")).complete_json([], {}, cancel=cancel)
        assert time.monotonic() - started < 3, "well before the 6 s the reply would take"


def test_the_server_child_reads_its_own_options_before_the_servers() -> None:
    from assistant.llm import server_child

    for wrong in (["1"], ["1", "--idle"], ["1", "--idle", "--model"], ["1", "--fast", "--"]):
        with pytest.raises(SystemExit, match="usage"):
            server_child.main(wrong)
    # Another parent than the one named: it exits at once, before starting anything.
    with pytest.raises(SystemExit) as ended:
        server_child.main([str(os.getppid() + 1), "--idle", "--", "--model", "m.gguf"])
    assert ended.value.code == 0


def test_the_runtime_runs_llama_server_unless_told_otherwise(tmp_path: Path) -> None:
    settings = make_settings("fast", tmp_path / "data", tmp_path / "cache")
    assert LLMRuntime(settings).server_name == "llama-server", "built by the install step"
    python = make_settings(
        "fast", tmp_path / "data", tmp_path / "cache", **{"llm.server": "llama-cpp-python"}
    )
    assert LLMRuntime(python).server_name == "llama-cpp-python"
    missing = make_settings(
        "fast",
        tmp_path / "data",
        tmp_path / "cache",
        **{"llm.server_binary": str(tmp_path / "no-such-llama-server")},
    )
    assert LLMRuntime(missing).server_name == "llama-cpp-python", "falls back, still works"


@pytest.mark.slow
def test_the_conversation_cache_survives_a_restart(fast_gguf: Path, tmp_path: Path) -> None:
    """llama-server saves the conversation slot's KV cache when the runtime stops and restores
    it at the next start: the first turn after a restart reads only its new message."""
    settings = make_settings("fast", tmp_path / "data", tmp_path / "cache")
    conversation = [
        {"role": "system", "content": "You are Brain OS. " + "Keep replies short. " * 60},
        {"role": "user", "content": "My sister Brigida lives in Parma."},
    ]
    runtime = LLMRuntime(settings)
    with runtime as client:
        client.complete(conversation, max_tokens=4)
        assert "".join(client.stream(conversation, max_tokens=4))
        assert client.last_reading is not None and client.last_reading.cached > 200
    saved = list(settings.llm_slots_dir.iterdir())
    assert settings.llm_slots_dir.parent == settings.data_dir, "the folder's own conversation"
    assert [path.suffix for path in saved] == [".bin"] and saved[0].stat().st_size > 0
    runtime = LLMRuntime(settings)
    with runtime as client:
        asked = [*conversation, {"role": "assistant", "content": "Noted."}]
        asked.append({"role": "user", "content": "Where does she live?"})
        pieces = client.stream(asked, max_tokens=16)
        assert next(pieces)
        pieces.close()  # as the agent closes a reply it cuts: the reading came with the start
        reading = client.last_reading
        assert reading is not None and reading.cached > 200, "restored, not read again"
        assert reading.read < 40, f"only the new messages are read: {reading}"


@pytest.mark.slow
def test_llama_server_reuses_the_cache_after_messages_left_the_middle(
    fast_settings: Settings,
) -> None:
    """--cache-reuse: after messages early in the prompt are taken out, the cached chunks
    after them are shifted into place instead of being read again (new text in their place
    would be read, and everything after it: see the next test for that case)."""
    runtime = LLMRuntime(fast_settings)
    head = {"role": "system", "content": "You are Brain OS."}
    tail = [
        {"role": "user", "content": f"Fact {n}: " + "the cat sat on the mat. " * 12}
        for n in range(6)
    ]
    with runtime as client:
        old = [
            {"role": "user", "content": f"Old {n}: " + "it rained all day. " * 10} for n in range(3)
        ]
        "".join(client.stream([head, *old, *tail], max_tokens=1))
        "".join(client.stream([head, *tail], max_tokens=1))
        reading = client.last_reading
        assert reading is not None and reading.cached > 4 * reading.read, reading


@pytest.mark.slow
def test_a_compacted_prompt_reads_only_its_summary_note(
    fast_settings: Settings, tmp_path: Path
) -> None:
    """A compaction removes the oldest messages and appends the summary: llama-server shifts
    the cached key/values of the messages kept into place (--cache-reuse) and reads only the
    note, where a summary at the top would have it read all that follows it again."""
    settings = make_settings("fast", tmp_path / "data", tmp_path / "cache")
    prefix = {"role": "system", "content": "You are Brain OS. " + "Keep replies short. " * 10}
    said = [
        {"role": "user", "content": f"Fact {n}: " + "the cat sat on the mat by the door. " * 6}
        for n in range(10)
    ]
    # The messages kept (~330 tokens) are more than one --cache-reuse chunk (256 tokens).
    note = {"role": "system", "content": f"{SUMMARY_HEAD}\nSid told five facts about a cat."}
    with LLMRuntime(settings) as client:
        client.complete(ahead_of_a_turn([prefix, *said]), max_tokens=1)
        client.complete(ahead_of_a_turn([prefix, *said[5:], note]), max_tokens=1)
        appended = client.last_reading
        client.complete(ahead_of_a_turn([prefix, *said]), max_tokens=1)
        client.complete(ahead_of_a_turn([prefix, note, *said[5:]]), max_tokens=1)
        on_top = client.last_reading
    assert appended is not None and on_top is not None
    assert appended.cached > 350 and appended.read < 60, appended
    assert on_top.read > 300, on_top


@pytest.mark.slow
@pytest.mark.parametrize("draft", [4, 0])
def test_llama_server_drafts_what_it_writes_from_the_prompt(draft: int, tmp_path: Path) -> None:
    """Prompt-lookup decoding (``llm.lookup_draft``): words the reply takes from the prompt
    are drafted and checked in a batch; the reply is the same as without."""
    settings = make_settings(
        "fast", tmp_path / "data", tmp_path / "cache", **{"llm.lookup_draft": str(draft)}
    )
    line = "The lighthouse keeper of Gull Rock lit the lamp at dusk and watched the sea."
    asked = [{"role": "user", "content": f"Say this sentence back exactly: {line}"}]
    with LLMRuntime(settings) as client:
        said = "".join(client.stream(asked, max_tokens=40, temperature=0.0))
        reading = client.last_reading
    assert "lighthouse keeper of Gull Rock" in said
    assert reading is not None
    if draft:
        assert reading.accepted >= 8 and reading.drafted >= reading.accepted, reading
    else:
        assert reading.drafted == 0, reading


@pytest.mark.slow
def test_a_prompt_too_long_for_llama_server_is_a_context_overflow(
    fast_gguf: Path, tmp_path: Path
) -> None:
    settings = make_settings(
        "fast", tmp_path / "data", tmp_path / "cache", **{"llm.context_window": "512"}
    )
    with LLMRuntime(settings) as client, pytest.raises(LLMContextOverflow):
        client.complete([{"role": "user", "content": "word " * 2000}], max_tokens=4)
