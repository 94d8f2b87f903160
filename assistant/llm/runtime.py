"""The LLM the app talks to: the configured endpoint, or a local server it starts and owns."""

from __future__ import annotations

from assistant.llm.client import Endpoint, LLMClient
from assistant.llm.server import LLMServerError, LocalLLMServer, ServerOptions, StatusCallback
from assistant.model_paths import ProfileModels
from assistant.settings import Settings


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
        self._closed = False

    def describe(self) -> str:
        """Which model and endpoint, before anything has been started."""
        llm = self.settings.llm
        if llm.base_url:
            return f"{llm.model or '(endpoint default)'} at {llm.base_url}"
        name = (
            llm.model_path.stem
            if llm.model_path
            else self.models.manifest.weight_for(self.settings.profile, "llm").id
        )
        return f"{name} on a local llama.cpp server"

    def start(self) -> LLMClient:
        llm = self.settings.llm
        if self._closed:
            raise LLMServerError("the app is shutting down")
        if llm.base_url:
            endpoint = Endpoint(llm.base_url, llm.model or "default", llm.api_key, is_local=False)
        else:
            paths = self.models.llm()
            alias = llm.model or paths.name
            self.server = LocalLLMServer(
                ServerOptions(
                    gguf=paths.gguf,
                    model_alias=alias,
                    context_window=llm.context_window,
                    threads=llm.threads,
                    startup_timeout_s=llm.startup_timeout_s,
                    max_restarts=llm.max_restarts,
                    prompt_cache_mb=llm.prompt_cache_mb,
                    log_path=self.settings.log_dir / "llm-server.log",
                ),
                on_status=self.on_status,
            )
            if self._closed:
                raise LLMServerError("the app is shutting down")
            base_url = self.server.start()
            endpoint = Endpoint(base_url, alias, None, is_local=True)
        self.client = LLMClient(
            endpoint,
            timeout_s=llm.timeout_s,
            json_mode=llm.json_mode,
            tool_calling=llm.tool_calling,
        )
        return self.client

    def stop(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.server is not None:
            self.server.stop()
            self.server = None

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
