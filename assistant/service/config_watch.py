"""The config file, watched while the service runs: a new ``[llm]`` section switches the
endpoint between turns, ``[service]`` applies at once, and the clients are told which other
changes wait for a restart."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from assistant.config import ConfigError, LoadedConfig
from assistant.protocol.common import Notice, Wire
from assistant.settings import Settings


class ConfigWatch:
    def __init__(
        self,
        loaded: LoadedConfig,
        reload: Callable[[], LoadedConfig] | None,
        poll_s: float,
        broadcast: Callable[[Wire], None],
        switch: Callable[[Settings], None],
    ) -> None:
        """``reload`` reads the config again (None: the file is not watched); ``switch``
        starts the new LLM between turns."""
        self.path = loaded.config_file
        # The settings in effect: the start's, with the LLM's and the service's as changed.
        self.settings = loaded.settings
        self.reload = reload
        self.poll_s = poll_s
        self.broadcast = broadcast
        self.switch = switch

    async def watch(self) -> None:
        if self.reload is None:
            return
        seen = _stamp(self.path)
        while True:
            await asyncio.sleep(self.poll_s)
            stamp = _stamp(self.path)
            if stamp == seen:
                continue
            seen = stamp
            try:
                loaded = self.reload()
            except ConfigError as error:
                self.broadcast(
                    Notice(
                        text=f"config not applied, keeping the current settings: {error}",
                        level="error",
                    )
                )
                continue
            self.apply(loaded.settings)

    def apply(self, settings: Settings) -> None:
        if settings.llm != self.settings.llm:
            self.switch(settings)
        if settings.service != self.settings.service:
            self.broadcast(Notice(text=f"service.background = {settings.service.background}"))
        later = [
            name
            for name in (
                "profile",
                "data_dir",
                "stt",
                "tts",
                "embedder",
                "audio",
                "voice",
                "agent",
                "vault",
            )
            if getattr(settings, name) != getattr(self.settings, name)
        ]
        if later:
            self.broadcast(
                Notice(
                    text=f"changed settings ({', '.join(later)}) take effect when the service "
                    "restarts (`brain stop`)",
                    level="warning",
                )
            )
        self.settings = self.settings.model_copy(
            update={"llm": settings.llm, "service": settings.service}
        )


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size
