"""The assistant service and its clients, over the real Unix socket, with the real memory
stores and embedder and a scripted OpenAI-compatible endpoint (the real local model is in
test_ui.py and test_agent_real.py)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from assistant.clients.connection import ServiceClient, ServiceNotRunning, launch_environment
from assistant.config import LoadedConfig, load_config
from assistant.protocol import Update, encode
from assistant.protocol.common import Notice
from assistant.protocol.conversation import (
    MAX_SAY_CHARS,
    Cancel,
    Draft,
    Hello,
    History,
    Left,
    ReplyChunk,
    ReplyEnd,
    Retry,
    Say,
    Status,
    UserSaid,
)
from assistant.protocol.tasks import GetTasks, Tasks
from assistant.service.paths import OwnerLock, socket_path
from assistant.service.server import AlreadyRunning, AssistantService
from memory.embedder import OnnxSentenceEmbedder
from tests.helpers.fake_openai import scripted_endpoint
from tests.helpers.service import InProcess, action, until
from tests.helpers.ui import wait_for
from voice.loop import HeardSoFar

STAGES = ["started", "memories", "prompt_sent", "first_text", "first_word", "reply_end"]


def reply_end(update: Update) -> bool:
    return isinstance(update, ReplyEnd)


async def test_two_clients_share_one_conversation_and_each_turn_is_timed_by_stage(
    loaded_for: Callable[..., LoadedConfig], start_service: Callable[..., InProcess]
) -> None:
    with scripted_endpoint("stream", action("Parma is lovely in spring.")) as (url, _):
        loaded = loaded_for(**{"llm.base_url": url})
        start_service(loaded)
        first = await ServiceClient.connect(loaded, "tui", start=False)
        second = await ServiceClient.connect(loaded, "chat", start=False)
        await first.send(Say(text="Tell me about Parma.", ref="r1"))
        for client in (first, second):
            seen = await until(client, reply_end)
            said = [u for u in seen if isinstance(u, UserSaid)]
            assert [(u.text, u.client, u.ref) for u in said] == [
                ("Tell me about Parma.", "tui", "r1")
            ]
            streamed = "".join(u.text for u in seen if isinstance(u, ReplyChunk))
            end = seen[-1]
            assert isinstance(end, ReplyEnd) and end.error is None
            assert end.text == streamed == "Parma is lovely in spring."
            # When each stage of the turn happened, in order, after the message was accepted.
            assert sorted(end.stages_ms, key=end.stages_ms.__getitem__) == STAGES
            assert all(0 <= ms < 60_000 for ms in end.stages_ms.values())
        late = await ServiceClient.connect(loaded, "late", start=False)
        history = [(item.role, item.text) for item in late.welcome.history]
        assert history[-2:] == [
            ("user", "Tell me about Parma."),
            ("assistant", "Parma is lovely in spring."),
        ]
        for client in (first, second, late):
            await client.close()


async def test_socket_is_private_and_one_service_owns_the_folder(
    loaded_for: Callable[..., LoadedConfig],
    start_service: Callable[..., InProcess],
    embedder: OnnxSentenceEmbedder,
) -> None:
    loaded = loaded_for(**{"llm.base_url": "http://127.0.0.1:9/v1"})
    start_service(loaded)
    path = socket_path(loaded.settings)
    assert stat.S_ISSOCK(path.stat().st_mode)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    with pytest.raises(AlreadyRunning, match="already owns"):
        await AssistantService(loaded, embedder=embedder, owner_wait_s=0.2).serve()


async def test_last_client_leaving_stops_the_service_unless_background(
    loaded_for: Callable[..., LoadedConfig], start_service: Callable[..., InProcess]
) -> None:
    loaded = loaded_for(**{"llm.base_url": "http://127.0.0.1:9/v1"})
    service = start_service(loaded)
    client = await ServiceClient.connect(loaded, "tui", start=False)
    # Once it has started, the service leaves what it holds out of full garbage
    # collections (assistant/garbage.py), until it stops.
    await wait_for(lambda: gc.get_freeze_count() > 0, 30)
    left = await client.leave()
    assert left == Left(stays=False, reason="no work pending")
    assert service.stopped()
    assert gc.get_freeze_count() == 0
    assert not socket_path(loaded.settings).exists()
    assert OwnerLock(loaded.settings.data_dir).wait_free(0)

    background = loaded_for(
        **{"llm.base_url": "http://127.0.0.1:9/v1", "service.background": "true"}
    )
    service = start_service(background)
    client = await ServiceClient.connect(background, "tui", start=False)
    left = await client.leave()
    assert left is not None and left.stays and "background" in left.reason
    assert not service.stopped(timeout=1)
    again = await ServiceClient.connect(background, "tasks", start=False)
    await again.close()


async def test_a_command_with_other_settings_is_told_the_service_runs_with_its_own(
    loaded_for: Callable[..., LoadedConfig], start_service: Callable[..., InProcess]
) -> None:
    running = {"llm.base_url": "http://127.0.0.1:9/v1", "llm.api_key": "first"}
    loaded = loaded_for(**running)
    service = start_service(loaded)
    same = await ServiceClient.connect(loaded, "tui", start=False)
    assert same.other_settings is None
    other = loaded_for(**{"llm.base_url": "http://127.0.0.1:8/v1", "llm.api_key": "second"})
    client = await ServiceClient.connect(other, "ask", start=False)
    note = client.other_settings
    assert note is not None and "\n" not in note
    assert "llm.base_url (http://127.0.0.1:9/v1 there)" in note
    assert "llm.api_key (another key there)" in note and "first" not in note
    assert "`brain stop`" in note
    await wait_for(lambda: gc.get_freeze_count() > 0, 30)  # started: its memory is open
    await client.leave()
    await same.leave()
    assert service.stopped()


async def test_pending_turn_keeps_the_service_up_until_it_is_answered(
    loaded_for: Callable[..., LoadedConfig], start_service: Callable[..., InProcess]
) -> None:
    with scripted_endpoint("slow_stream", action("one two three four five six")) as (url, _):
        loaded = loaded_for(**{"llm.base_url": url})
        service = start_service(loaded)
        client = await ServiceClient.connect(loaded, "ask", start=False)
        await client.send(Say(text="Count to six.", ref="r"))
        await until(client, lambda u: isinstance(u, ReplyChunk))
        await client.send(GetTasks())
        listed = (await until(client, lambda u: isinstance(u, Tasks)))[-1]
        assert isinstance(listed, Tasks) and [w.kind for w in listed.work][:1] == ["reply"]
        left = await client.leave()
        assert left is not None and left.stays and left.reason.startswith("finishing 1 turn")
        assert service.stopped(timeout=60), "it stops once the turn is answered"
    reopened = start_service(loaded)
    late = await ServiceClient.connect(loaded, "check", start=False)
    history = late.welcome.history
    if not history:  # the memory opens after the first client attached
        shown = (await until(late, lambda u: isinstance(u, History)))[-1]
        history = shown.items  # type: ignore[union-attr]
    assert [(i.role, i.text) for i in history][-2:] == [
        ("user", "Count to six."),
        ("assistant", "one two three four five six"),
    ]
    await late.close()
    reopened.stop()


async def test_cancel_mid_stream_keeps_the_delivered_part(
    loaded_for: Callable[..., LoadedConfig], start_service: Callable[..., InProcess]
) -> None:
    words = " ".join(f"word{i}" for i in range(40))
    with scripted_endpoint("slow_stream", action(words)) as (url, _):
        loaded = loaded_for(**{"llm.base_url": url})
        start_service(loaded)
        client = await ServiceClient.connect(loaded, "tui", start=False)
        await client.send(Say(text="Say forty words.", ref="r"))
        seen = await until(client, lambda u: isinstance(u, ReplyChunk) and "word3" in u.text)
        await client.send(Cancel())
        seen += await until(client, reply_end)
        end = seen[-1]
        assert isinstance(end, ReplyEnd) and end.interrupted
        delivered = "".join(u.text for u in seen if isinstance(u, ReplyChunk))
        assert "word3" in delivered and "word39" not in delivered
        assert end.text == delivered + " [interrupted]"
        await client.close()


async def test_bad_requests_get_a_one_line_error_and_the_connection_stays(
    loaded_for: Callable[..., LoadedConfig], start_service: Callable[..., InProcess]
) -> None:
    with scripted_endpoint("stream", action("Still here.")) as (url, _):
        loaded = loaded_for(**{"llm.base_url": url})
        start_service(loaded)
        client = await ServiceClient.connect(loaded, "tui", start=False)
        for line in (b"{not json\n", b'{"type": "fly"}\n', b"\xff\xfe\n", b'{"type":"say"}\n'):
            client.writer.write(line)
            notice = (await until(client, lambda u: isinstance(u, Notice)))[-1]
            assert isinstance(notice, Notice) and notice.level == "error"
            assert "\n" not in notice.text
        await client.send(Say(text="x" * (MAX_SAY_CHARS + 1)))
        notice = (await until(client, lambda u: isinstance(u, Notice)))[-1]
        assert isinstance(notice, Notice) and "limit" in notice.text
        await client.send(Say(text="caf\udce9 ok", ref="r"))  # a lone surrogate: not UTF-8
        seen = await until(client, reply_end)
        said = [u for u in seen if isinstance(u, UserSaid)]
        assert said[0].text == "caf\ufffd ok" and seen[-1].text == "Still here."  # type: ignore[union-attr]
        await client.close()


async def test_a_client_of_another_protocol_version_is_refused(
    loaded_for: Callable[..., LoadedConfig], start_service: Callable[..., InProcess]
) -> None:
    loaded = loaded_for(**{"llm.base_url": "http://127.0.0.1:9/v1"})
    start_service(loaded)
    reader, writer = await asyncio.open_unix_connection(str(socket_path(loaded.settings)))
    writer.write(encode(Hello(version=99, client="future")))
    answer = json.loads(await reader.readline())
    assert answer["type"] == "notice" and "version 99 is not supported" in answer["text"]
    assert await reader.readline() == b""
    writer.close()


async def test_down_endpoint_keeps_the_turn_and_says_why(
    loaded_for: Callable[..., LoadedConfig], start_service: Callable[..., InProcess]
) -> None:
    with scripted_endpoint("error500") as (url, _):
        loaded = loaded_for(**{"llm.base_url": url})
        service = start_service(loaded)
        client = await ServiceClient.connect(loaded, "tui", start=False)
        await client.send(Say(text="Remember my bike is blue.", ref="r"))
        end = (await until(client, reply_end, timeout=60))[-1]
        assert isinstance(end, ReplyEnd) and end.text == ""
        assert end.error is not None and "HTTP 500" in end.error
        session = service.service.opening.session
        assert session is not None
        assert [m.text for m in session.stores.recall.recent(3)] == ["Remember my bike is blue."]
        await client.close()


async def test_failed_llm_start_can_be_retried(
    loaded_for: Callable[..., LoadedConfig],
    start_service: Callable[..., InProcess],
    tmp_path: Path,
) -> None:
    missing = tmp_path / "missing.gguf"
    loaded = loaded_for(**{"llm.model_path": str(missing)})
    start_service(loaded)
    client = await ServiceClient.connect(loaded, "tui", start=False)
    failed = (await until(client, lambda u: isinstance(u, Status) and u.state == "failed"))[-1]
    assert isinstance(failed, Status) and "does not exist" in failed.text
    missing.write_bytes(b"not a gguf")
    await client.send(Retry())
    again = (await until(client, lambda u: isinstance(u, Status) and u.state == "failed", 60))[-1]
    assert isinstance(again, Status) and "exited" in again.text
    await client.close()


async def test_endpoint_change_in_the_config_file_applies_without_restart(
    loaded_for: Callable[..., LoadedConfig], start_service: Callable[..., InProcess]
) -> None:
    with (
        scripted_endpoint("stream", action("Answer from A.")) as (url_a, _),
        scripted_endpoint("stream", action("Answer from B.")) as (url_b, _),
    ):
        loaded = loaded_for(f'[llm]\nbase_url = "{url_a}"\n')
        flags = {k: str(v) for k, v in _flags(loaded).items()}

        def reload() -> LoadedConfig:
            return load_config(flags, environ={}, config_file=loaded.config_file)

        start_service(loaded, reload=reload, config_poll_s=0.1)
        client = await ServiceClient.connect(loaded, "tui", start=False)
        await client.send(Say(text="Who answers?", ref="1"))
        assert (await until(client, reply_end))[-1].text == "Answer from A."  # type: ignore[union-attr]

        loaded.config_file.write_text(f'[llm]\nbase_url = "{url_b}"\n', encoding="utf-8")
        await until(client, lambda u: isinstance(u, Notice) and "now" in u.text)
        await client.send(Say(text="And now?", ref="2"))
        assert (await until(client, reply_end))[-1].text == "Answer from B."  # type: ignore[union-attr]

        loaded.config_file.write_text("[llm]\nbase_url = 7\n", encoding="utf-8")
        bad = (await until(client, lambda u: isinstance(u, Notice)))[-1]
        assert isinstance(bad, Notice) and "keeping the current settings" in bad.text
        await client.close()


def _flags(loaded: LoadedConfig) -> dict[str, object]:
    from assistant.config import get_dotted

    return {
        key: get_dotted(loaded.settings, key)
        for key, source in loaded.sources.items()
        if source.startswith("flag")
    }


# The real `brain` command, as a user runs it


def brain(
    loaded: LoadedConfig, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    environment = launch_environment(loaded)
    return subprocess.run(
        [sys.executable, "-m", "assistant.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=environment,
        timeout=180,
    )


def test_brain_ask_starts_the_service_and_it_stops_after(
    loaded_for: Callable[..., LoadedConfig],
) -> None:
    with scripted_endpoint("stream", action("It is sunny.")) as (url, _):
        loaded = loaded_for(**{"llm.base_url": url})
        assert (
            brain(loaded, "tasks", "--json").stdout.strip()
            == '{"running": false, "work": [], "tasks": []}'
        )
        asked = brain(loaded, "ask", "How", "is", "the", "weather?")
        assert asked.returncode == 0, asked.stderr
        assert asked.stdout == "It is sunny.\n"
        assert OwnerLock(loaded.settings.data_dir).wait_free(60), "the service stops after"
        assert not socket_path(loaded.settings).exists()


def test_brain_chat_streams_replies_and_another_client_sees_them(
    loaded_for: Callable[..., LoadedConfig],
) -> None:
    with scripted_endpoint("stream", action("Noted.")) as (url, _):
        loaded = loaded_for(**{"llm.base_url": url, "service.background": "true"})
        try:
            chat = brain(loaded, "chat", stdin="My sister is Aya.\n")
            assert chat.returncode == 0, chat.stderr
            assert "brain> Noted." in chat.stdout
            assert "keeps running (service.background = true)" in chat.stderr
            listed = json.loads(brain(loaded, "tasks", "--json").stdout)
            assert listed["running"] is True and listed["work"] == []
            asked = brain(loaded, "ask", "What did I just tell you?")
            assert asked.stdout == "Noted.\n"
        finally:
            stopped = brain(loaded, "stop")
        assert stopped.returncode == 0 and "Stopped" in stopped.stdout
        assert not socket_path(loaded.settings).exists()


def test_a_stale_socket_from_a_killed_service_is_replaced(
    loaded_for: Callable[..., LoadedConfig],
) -> None:
    with scripted_endpoint("stream", action("Back again.")) as (url, _):
        loaded = loaded_for(**{"llm.base_url": url, "service.background": "true"})

        async def attach() -> int:
            client = await ServiceClient.connect(loaded, "test")
            pid = client.welcome.pid
            await client.close()
            return pid

        first = asyncio.run(attach())
        os.kill(first, signal.SIGKILL)
        path = socket_path(loaded.settings)
        deadline = time.monotonic() + 10
        while _alive(first) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert path.exists(), "a killed service leaves its socket behind"
        probe = socket.socket(socket.AF_UNIX)
        with pytest.raises(ConnectionRefusedError):
            probe.connect(str(path))
        probe.close()
        second = asyncio.run(attach())
        assert second != first
        asked = brain(loaded, "ask", "Are you there?")
        assert asked.stdout == "Back again.\n"
        assert brain(loaded, "stop").returncode == 0


def test_two_clients_starting_it_at_once_share_one_service(
    loaded_for: Callable[..., LoadedConfig],
) -> None:
    with scripted_endpoint("stream", action("One of us.")) as (url, _):
        loaded = loaded_for(**{"llm.base_url": url, "service.background": "true"})

        async def both() -> list[int]:
            clients = await asyncio.gather(
                ServiceClient.connect(loaded, "first"), ServiceClient.connect(loaded, "second")
            )
            pids = [client.welcome.pid for client in clients]
            for client in clients:
                await client.close()
            return pids

        try:
            first, second = asyncio.run(both())
            assert first == second, "both attached to the one service that owns the folder"
        finally:
            assert brain(loaded, "stop").returncode == 0
        # A second service slow to start (a loaded machine: seen in full-suite runs) finds the
        # folder free only once the first has stopped, and takes it over; it is stopped too.
        if not OwnerLock(loaded.settings.data_dir).wait_free(5):
            assert brain(loaded, "stop").returncode == 0
        assert OwnerLock(loaded.settings.data_dir).wait_free(10), "the second service left"


def test_a_stopped_service_is_gone_once_another_owns_the_folder(tmp_path: Path) -> None:
    """`brain stop` waits for the service it stopped, not for a free folder: a second
    service, started meanwhile by another client, may take the folder over at once."""
    owner = OwnerLock(tmp_path)
    assert owner.acquire()
    assert not OwnerLock(tmp_path).wait_left_by(os.getpid(), 0.2), "still held by it"
    owner.path.write_text("1\n")  # what a service that took over writes
    assert OwnerLock(tmp_path).wait_left_by(os.getpid(), 0.0)
    owner.release()
    assert OwnerLock(tmp_path).wait_left_by(os.getpid(), 0.0)


def test_clients_that_do_not_start_it_say_so(loaded_for: Callable[..., LoadedConfig]) -> None:
    loaded = loaded_for()
    with pytest.raises(ServiceNotRunning):
        asyncio.run(ServiceClient.connect(loaded, "tasks", start=False))
    assert "not running" in brain(loaded, "stop").stdout
    assert "not running" in brain(loaded, "tasks").stdout


def test_a_client_does_not_load_the_memory_store() -> None:
    """`brain stop`, `brain listen` and the terminal app only speak the protocol: importing
    LanceDB with it took 2.5 s of every command's start."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, assistant.cli, assistant.clients.terminal, ui.app;"
            "heavy = ('lancedb', 'onnxruntime', 'faster_whisper');"
            "print(sorted(m for m in heavy if m in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "[]"


def _alive(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def drafts_read(running: InProcess, release: threading.Event | None = None) -> list[str]:
    """The texts the service has the agent read ahead, in order ("speculate: ..." for words heard
    at a pause), instead of reading them; each read lasts until ``release`` is set, if one is
    given."""
    read: list[str] = []

    def read_draft(text: str, speculate: bool = False) -> bool:
        read.append(f"speculate: {text}" if speculate else text)
        return release is None or release.wait(30)

    running.service.drafts.read_ahead = read_draft  # type: ignore[method-assign]
    return read


@contextlib.asynccontextmanager
async def typing_into(
    loaded_for: Callable[..., LoadedConfig], start_service: Callable[..., InProcess]
) -> AsyncIterator[tuple[ServiceClient, list[str], threading.Event]]:
    """A terminal client of a service whose draft reads are noted (``drafts_read``), each
    lasting until the event is set."""
    with scripted_endpoint("stream", action("Noted.")) as (url, _):
        loaded = loaded_for(**{"llm.base_url": url})
        running = start_service(loaded)
        release = threading.Event()
        read = drafts_read(running, release)
        client = await ServiceClient.connect(loaded, "tui", start=False)
        try:
            yield client, read, release
        finally:
            await client.close()


async def test_drafts_sent_during_a_read_leave_only_the_newest_to_read(
    loaded_for: Callable[..., LoadedConfig], start_service: Callable[..., InProcess]
) -> None:
    async with typing_into(loaded_for, start_service) as (client, read, release):
        for draft in ("Where", "Where does", "Where does my", "Where does my sister"):
            await client.send(Draft(text=draft))
        await wait_for(lambda: read == ["Where"], 10)
        release.set()
        await wait_for(lambda: read == ["Where", "Where does my sister"], 10)
        await asyncio.sleep(0.3)
        assert read == ["Where", "Where does my sister"], "the drafts in between were skipped"


async def test_a_typed_draft_that_ends_a_sentence_has_its_reply_asked_for(
    loaded_for: Callable[..., LoadedConfig], start_service: Callable[..., InProcess]
) -> None:
    async with typing_into(loaded_for, start_service) as (client, read, release):
        await client.send(Draft(text="Where does"))
        await wait_for(lambda: read == ["Where does"], 10)
        await client.send(Draft(text="Where does my sister live?"))
        await wait_for(lambda: read == ["Where does", "speculate: Where does my sister live?"], 10)
        release.set()
        await asyncio.sleep(0.3)
        assert len(read) == 2, "asked for at once, beside the read under way, and only once"


async def test_words_heard_at_a_pause_have_their_reply_asked_for_and_others_are_read(
    loaded_for: Callable[..., LoadedConfig], start_service: Callable[..., InProcess]
) -> None:
    with scripted_endpoint("stream", action("Noted.")) as (url, _):
        loaded = loaded_for(**{"llm.base_url": url})
        running = start_service(loaded)
        release = threading.Event()
        read = drafts_read(running, release)

        def heard(so_far: HeardSoFar) -> None:
            # As the voice loop reports it, from its own thread.
            threading.Thread(
                target=running.service.jobs.from_thread(running.service.voice.on_event),
                args=(so_far,),
            ).start()

        heard(HeardSoFar("Where does my", paused=False))
        await wait_for(lambda: read == ["Where does my"], 10)
        heard(HeardSoFar("Where does my sister"))
        await wait_for(lambda: read == ["Where does my", "speculate: Where does my sister"], 10)
        release.set()
        await asyncio.sleep(0.3)
        assert len(read) == 2, "asked for at once, beside the read under way, and only once"
