"""The LLM the app talks to: the configured endpoint, or a local server it starts and owns."""

from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path

from assistant.llm.client import Endpoint, LLMClient
from assistant.llm.server import LLMServerError, LocalLLMServer, ServerOptions, StatusCallback
from assistant.llm.slots import SlotCache, SlotResult, slot_file_name
from assistant.llm.tokens import TokenCounter, estimate_tokens, vocabulary_counter
from assistant.model_paths import ProfileModels
from assistant.settings import Settings

log = logging.getLogger(__name__)

# The background server computes only while the cores are free, so a long request (a
# window's summary, reading its new prompt ahead) may take minutes while the user talks: at
# llm.timeout_s (120 s) such a request timed out and the compaction's prompt was not handed
# over (the turn benchmark's turn 22 read 2,525 tokens).
BACKGROUND_TIMEOUT_S = 900.0


def llama_server_binary(configured: Path | None) -> Path | None:
    """llama.cpp's server: the configured binary, else the one the install step put beside
    the app's Python, else one on PATH; None when there is none."""
    if configured is not None:
        return configured if configured.is_file() else None
    beside = Path(sys.executable).parent / "llama-server"
    if beside.is_file():
        return beside
    found = shutil.which("llama-server")
    return Path(found) if found else None


class LLMRuntime:
    """``with LLMRuntime(...) as client:`` gives a ready client and cleans up on every exit."""

    def __init__(
        self,
        settings: Settings,
        models: ProfileModels | None = None,
        on_status: StatusCallback | None = None,
    ) -> None:
        self.settings = settings
        self.models = models or ProfileModels(settings)
        self.on_status = on_status
        self.server: LocalLLMServer | None = None
        self.client: LLMClient | None = None
        self.background_server: LocalLLMServer | None = None
        self.background_client: LLMClient | None = None
        self._counter: TokenCounter | None = None
        self._closed = False
        self._binary: Path | None = None
        # The servers' saved KV caches (llama-server only).
        self.slots: SlotCache | None = None
        if settings.llm.server == "llama-server" and not settings.llm.base_url:
            self._binary = llama_server_binary(settings.llm.server_binary)
            if self._binary is None:
                log.warning(
                    "llama-server not found (run `make run` to build it); using "
                    "llama-cpp-python's server, which re-reads more of each prompt"
                )

    @property
    def server_name(self) -> str:
        """Which local server runs the model ("llama-server" or "llama-cpp-python"); the
        endpoint's URL for a remote one."""
        if self.settings.llm.base_url:
            return self.settings.llm.base_url
        return "llama-server" if self._binary is not None else "llama-cpp-python"

    def start(self) -> LLMClient:
        llm = self.settings.llm
        if self._closed:
            raise LLMServerError("the app is shutting down")
        if llm.base_url:
            endpoint = Endpoint(llm.base_url, llm.model or "default", llm.api_key, is_local=False)
        else:
            self.server = self._server(
                "llm-server.log", self.on_status, slot_dir=self.settings.llm_slots_dir
            )
            if self._closed:
                raise LLMServerError("the app is shutting down")
            endpoint = Endpoint(self.server.start(), self.server.options.model_alias, is_local=True)
            if self.server.options.slot_dir is not None:
                self.slots = SlotCache(endpoint.base_url, self._slot_file("conversation"))
                restored = self.slots.restore()
                if restored.ok:
                    log.info(
                        "restored the conversation's KV cache: %d tokens in %.2f s",
                        restored.tokens,
                        restored.seconds,
                    )
        self.client = self._client(endpoint, no_repeat=self.settings.llm.no_repeat)
        return self.client

    def save_conversation(self) -> SlotResult:
        """Save the conversation server's KV cache, for the next start (llama-server only)."""
        return self.slots.save() if self.slots is not None else SlotResult(False)

    def start_background(self) -> LLMClient:
        """A client for background work (importance ratings, reflection). For the local
        model, a second server on the same weights (mapped, so shared in memory) at the lowest
        CPU priority: the server keeps the state of one prompt only, and a rating sent to the
        conversation's server would make the next turn read its whole prompt again
        (docs/BENCHMARKS.md); at idle priority it leaves the cores to a reply. Other endpoints
        take both kinds of request on one client."""
        if self.client is None:
            raise LLMServerError("the LLM is not started")
        if self.server is None:
            return self.client
        if self.background_client is None:
            self.background_server = self._server(
                "llm-server-background.log", None, idle_priority=True
            )
            if self._closed:
                raise LLMServerError("the app is shutting down")
            endpoint = Endpoint(
                self.background_server.start(),
                self.background_server.options.model_alias,
                is_local=True,
            )
            self.background_client = self._client(
                endpoint, max(self.settings.llm.timeout_s, BACKGROUND_TIMEOUT_S)
            )
        return self.background_client

    def _slot_file(self, purpose: str) -> str:
        llm = self.settings.llm
        alias = llm.model or self.models.llm().name
        return slot_file_name(f"{purpose}-{alias}", llm.context_window, llm.kv_cache_type)

    def _server(
        self,
        log_name: str,
        on_status: StatusCallback | None,
        idle_priority: bool = False,
        slot_dir: Path | None = None,
    ) -> LocalLLMServer:
        llm = self.settings.llm
        paths = self.models.llm()
        return LocalLLMServer(
            ServerOptions(
                gguf=paths.gguf,
                model_alias=llm.model or paths.name,
                context_window=llm.context_window,
                threads=llm.threads,
                startup_timeout_s=llm.startup_timeout_s,
                max_restarts=llm.max_restarts,
                log_path=self.settings.log_dir / log_name,
                idle_priority=idle_priority,
                binary=self._binary,
                slot_dir=slot_dir if self._binary is not None else None,
                cache_reuse=llm.cache_reuse,
                lookup_draft=llm.lookup_draft,
                kv_cache_type=llm.kv_cache_type,
            ),
            on_status=on_status,
        )

    def _client(
        self, endpoint: Endpoint, timeout_s: float | None = None, no_repeat: float = 0.0
    ) -> LLMClient:
        llm = self.settings.llm
        return LLMClient(
            endpoint,
            timeout_s=timeout_s or llm.timeout_s,
            json_mode=llm.json_mode,
            tool_calling=llm.tool_calling,
            count_tokens=self._local_counter() if endpoint.is_local else estimate_tokens,
            no_repeat=no_repeat,
        )

    def _local_counter(self) -> TokenCounter:
        """The local model's exact counter, read once for both of its servers."""
        if self._counter is None:
            self._counter = vocabulary_counter(self.models.llm().gguf)
        return self._counter

    def stop(self) -> None:
        if self.slots is not None and self.server is not None:
            self.save_conversation()
        self.slots = None
        for client in (self.background_client, self.client):
            if client is not None:
                client.close()
        self.client = self.background_client = None
        for server in (self.background_server, self.server):
            if server is not None:
                server.stop()
        self.server = self.background_server = None

    def close(self) -> None:
        """Stop for good: a start still under way in another thread gives up."""
        self._closed = True
        self.stop()

    def __enter__(self) -> LLMClient:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: object) -> None:
        self.stop()
