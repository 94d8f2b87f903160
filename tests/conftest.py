"""Shared fixtures: real models, loaded once per session, in a throw-away cache and data folder."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
# No test reads or writes the user's own data folder (a saved window there once leaked into a
# test that opened the agent on default settings).
os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="brain-os-test-data-")

from assistant.agent.tools import Stores
from assistant.agent.wiring import open_stores
from assistant.config import LoadedConfig, load_config
from assistant.llm.client import LLMClient
from assistant.llm.runtime import LLMRuntime
from assistant.model_paths import ProfileModels
from assistant.parts import load_stt
from assistant.service.server import AssistantService
from assistant.settings import Settings
from memory.database import open_database
from memory.embedder import OnnxSentenceEmbedder
from memory.graph.store import GraphStore
from memory.locking import WriteLock
from memory.stream import MemoryStream
from tests.helpers.service import InProcess
from tests.memory_helpers import Clock, open_stream
from voice.stt import WhisperSTT
from voice.tts import PiperTTS
from voice.turn_end import SmartTurn

REPO = Path(__file__).resolve().parent.parent
atexit.register(shutil.rmtree, os.environ["XDG_DATA_HOME"], ignore_errors=True)


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One model cache for the whole run, so split weights are assembled once; removed at the
    end (1.7 GB of weights, and pytest keeps the folders of its last three runs)."""
    cache = tmp_path_factory.mktemp("cache")
    yield cache
    shutil.rmtree(cache, ignore_errors=True)


def make_loaded(
    profile: str, data_dir: Path, cache_dir: Path, config_text: str = "", **flags: str
) -> LoadedConfig:
    """Settings as the command line would load them: ``flags`` over a config file of its own
    (``config_text``) next to ``data_dir``, the environment ignored; voice off unless
    ``flags`` turn it on."""
    given = {
        "profile": profile,
        "data_dir": str(data_dir),
        "cache_dir": str(cache_dir),
        # The speech loop loads Whisper and Piper: only the tests of voice turn it on.
        "voice.enabled": "false",
        # The day plan asks the LLM in the background from the start: its own tests turn it on.
        "tasks.day_plan": "false",
        # So does learning the knowledge graph.
        "agent.knowledge_graph": "false",
        # And the agent's own look at what changed, at each heartbeat.
        "heartbeat.proactive": "false",
        **flags,
    }
    config_file = data_dir.parent / "config.toml"
    config_file.parent.mkdir(parents=True, exist_ok=True)
    config_file.write_text(config_text, encoding="utf-8")
    return load_config(flags=given, environ={}, config_file=config_file)


def make_settings(profile: str, data_dir: Path, cache_dir: Path, **flags: str) -> Settings:
    return make_loaded(profile, data_dir, cache_dir, **flags).settings


@pytest.fixture
def runtime_dir() -> Iterator[Path]:
    """A short private folder for service sockets (their paths are capped at ~107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="brt"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def fast_settings(tmp_path_factory: pytest.TempPathFactory, session_cache: Path) -> Settings:
    return make_settings("fast", tmp_path_factory.mktemp("data-fast"), session_cache)


@pytest.fixture(scope="session")
def quality_settings(tmp_path_factory: pytest.TempPathFactory, session_cache: Path) -> Settings:
    return make_settings("quality", tmp_path_factory.mktemp("data-quality"), session_cache)


@pytest.fixture(scope="session")
def embedder(fast_settings: Settings) -> OnnxSentenceEmbedder:
    """The real MiniLM embedder, loaded once."""
    paths = ProfileModels(fast_settings).embedder()
    return OnnxSentenceEmbedder(paths.model, paths.tokenizer)


@pytest.fixture
def stores(tmp_path: Path, embedder: OnnxSentenceEmbedder) -> Iterator[Stores]:
    """The agent's real stores in a fresh folder (ratings off: tests that rate open their own)."""
    opened = open_stores(tmp_path / "data", embedder, rate=False, core_memory_chars=400)
    yield opened
    opened.stream.close()


@pytest.fixture(scope="session")
def fast_stt(fast_settings: Settings) -> WhisperSTT:
    """Whisper tiny.en (the fast profile's), loaded once."""
    return load_stt(fast_settings, ProfileModels(fast_settings).stt())


@pytest.fixture(scope="session")
def turn_judge(fast_settings: Settings) -> SmartTurn:
    return SmartTurn(ProfileModels(fast_settings).turn())


@pytest.fixture(scope="session")
def fast_tts(fast_settings: Settings) -> PiperTTS:
    """The fast profile's Piper voice, loaded once."""
    paths = ProfileModels(fast_settings).tts()
    return PiperTTS(paths.model, paths.config)


@pytest.fixture(scope="session")
def fast_llm(fast_settings: Settings) -> Iterator[LLMClient]:
    """The fast profile's model on a real local llama.cpp server, shared by the session."""
    runtime = LLMRuntime(fast_settings, ProfileModels(fast_settings))
    with runtime as client:
        yield client


@pytest.fixture(scope="session")
def quality_llm(quality_settings: Settings) -> Iterator[LLMClient]:
    """The default profile's model (1.5B) on a real local llama.cpp server, for the tests
    that need a model able to do the job (a research task, learning facts)."""
    with LLMRuntime(quality_settings, ProfileModels(quality_settings)) as client:
        yield client


# How long a shared server may take to stop writing after a test (a cancelled stream stops
# at its next token).
SHARED_SERVER_IDLE_S = 10.0


@pytest.fixture(autouse=True)
def shared_servers_left_idle(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that leaves a shared server writing (a request abandoned without closing its
    stream, work of its own not waited for) slows every test after it: a compaction left
    running made the next test's doctor check take 49-121 s instead of 15-23 s. So after a
    test that used one, the server must be idle within seconds."""
    yield
    for name in ("fast_llm", "quality_llm"):
        if name in request.fixturenames:
            client: LLMClient = request.getfixturevalue(name)
            busy_s = wait_idle(client.endpoint.base_url.removesuffix("/v1"))
            assert busy_s < SHARED_SERVER_IDLE_S, f"{name}'s server still writing after the test"


def wait_idle(server: str) -> float:
    """Seconds until llama-server's slots are all idle (at most SHARED_SERVER_IDLE_S)."""
    started = time.monotonic()
    while time.monotonic() - started < SHARED_SERVER_IDLE_S:
        with urllib.request.urlopen(f"{server}/slots", timeout=5) as answer:
            if not any(slot.get("is_processing") for slot in json.load(answer)):
                break
        time.sleep(0.1)
    return time.monotonic() - started


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    """Where the test MCP server writes files (an action outside the memory store)."""
    folder = tmp_path / "sandbox"
    folder.mkdir()
    return folder


@pytest.fixture
def clock() -> Clock:
    """A clock that stands still until a test moves it."""
    return Clock()


@pytest.fixture
def stream(tmp_path: Path, embedder: OnnxSentenceEmbedder, clock: Clock) -> Iterator[MemoryStream]:
    """A fresh memory stream on real LanceDB, with the real embedder and the test clock."""
    memory = open_stream(tmp_path / "data", embedder, clock=clock)
    yield memory
    memory.close()


@pytest.fixture
def graph_store(tmp_path: Path, embedder: OnnxSentenceEmbedder) -> GraphStore:
    """The knowledge graph's tables on real LanceDB, beside the ``stream`` fixture's."""
    data = tmp_path / "data"
    return GraphStore(open_database(data), WriteLock(data / "memory.lock"), embedder)


@pytest.fixture
def loaded_for(
    tmp_path: Path, session_cache: Path, runtime_dir: Path
) -> Callable[..., LoadedConfig]:
    """Settings for a service of the fast profile in this test's own folders."""

    def make(config_text: str = "", **flags: str) -> LoadedConfig:
        return make_loaded(
            "fast",
            tmp_path / "data",
            session_cache,
            config_text,
            **{"service.runtime_dir": str(runtime_dir), **flags},
        )

    return make


@pytest.fixture
def start_service(
    embedder: OnnxSentenceEmbedder,
) -> Iterator[Callable[..., InProcess]]:
    """Starts services in-process (stopped after the test)."""
    running: list[InProcess] = []

    def start(loaded: LoadedConfig, **options: object) -> InProcess:
        service = AssistantService(loaded, embedder=embedder, **options)  # type: ignore[arg-type]
        running.append(InProcess(service))
        return running[-1]

    yield start
    for service in running:
        service.stop()
