"""Attaching to the service: connect to its socket, starting it first if it is not running."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

from pydantic import ValidationError

from assistant.config import LoadedConfig, env_name, get_dotted, other_settings
from assistant.protocol import Update, decode_update, describe, encode
from assistant.protocol.common import MAX_LINE_BYTES, Notice, ProtocolError, Wire
from assistant.protocol.conversation import Hello, Leave, Left, Welcome
from assistant.service.paths import socket_path
from assistant.settings import default_config_file

# A fresh service listens before it loads anything, so this only covers Python starting.
START_TIMEOUT_S = 30.0
LEAVE_TIMEOUT_S = 5.0


class ServiceError(Exception):
    """The service could not be reached or started; the message says why in one line."""


class ServiceNotRunning(ServiceError):
    pass


class ServiceClient:
    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, welcome: Welcome
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.welcome = welcome
        # One line when the service runs with settings other than the ones this client loaded.
        self.other_settings: str | None = None

    @classmethod
    async def connect(cls, loaded: LoadedConfig, name: str, *, start: bool = True) -> ServiceClient:
        """Attach as ``name``; if no service runs and ``start`` is set, start one first."""
        client = await cls._attach_or_start(loaded, name, start)
        client.other_settings = other_settings(loaded, client.welcome.settings)
        return client

    @classmethod
    async def _attach_or_start(cls, loaded: LoadedConfig, name: str, start: bool) -> ServiceClient:
        path = socket_path(loaded.settings)
        try:
            return await cls._attach(path, name)
        except (FileNotFoundError, ConnectionRefusedError):
            if not start:
                raise ServiceNotRunning(f"no Brain OS service is running ({path})") from None
        process = launch_service(loaded)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                return await cls._attach(path, name)
            except (FileNotFoundError, ConnectionRefusedError):
                pass
            # Exit code 0 means another client's service won the race: keep trying to attach.
            if process.poll() not in (None, 0) or time.monotonic() > deadline:
                raise ServiceError(
                    f"the Brain OS service did not start ({_log_tail(loaded)}); "
                    f"see {service_log(loaded)}"
                )
            await asyncio.sleep(0.05)

    @classmethod
    async def _attach(cls, path: Path, name: str) -> ServiceClient:
        reader, writer = await asyncio.open_unix_connection(str(path), limit=MAX_LINE_BYTES)
        writer.write(encode(Hello(client=name)))
        await writer.drain()
        first = await _read_update(reader)
        if isinstance(first, Welcome):
            return cls(reader, writer, first)
        writer.close()
        reason = first.text if isinstance(first, Notice) else "it closed the connection"
        raise ServiceError(f"the service refused to attach: {reason}")

    async def send(self, message: Wire) -> None:
        try:
            self.writer.write(encode(message))
            await self.writer.drain()
        except ConnectionError as error:
            raise ServiceError(f"lost the connection to the service ({error})") from None

    async def receive(self) -> Update | None:
        """The next update; None when the service closed the connection."""
        return await _read_update(self.reader)

    async def updates(self) -> AsyncIterator[Update]:
        while (update := await self.receive()) is not None:
            yield update

    async def leave(self) -> Left | None:
        """Say goodbye; the answer says whether the service keeps running and why."""
        try:
            await self.send(Leave())
            async with asyncio.timeout(LEAVE_TIMEOUT_S):
                async for update in self.updates():
                    if isinstance(update, Left):
                        return update
        except (ServiceError, TimeoutError):
            return None
        finally:
            await self.close()
        return None

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError):
            await self.writer.wait_closed()


async def _read_update(reader: asyncio.StreamReader) -> Update | None:
    try:
        line = await reader.readline()
    except (ConnectionError, ValueError) as error:
        raise ServiceError(f"lost the connection to the service ({error})") from None
    if not line:
        return None
    try:
        return decode_update(line)
    except (ProtocolError, ValidationError) as error:
        return Notice(text=f"unreadable update from the service: {describe(error)}", level="error")


def launch_environment(loaded: LoadedConfig) -> dict[str, str]:
    """This process's environment plus the settings ``loaded`` took from flags (as
    ``BRAIN_*`` variables) and its config file: a child ``brain`` loads the same settings."""
    environment = dict(os.environ)
    for key, source in loaded.sources.items():
        if source.startswith("flag"):
            value = get_dotted(loaded.settings, key)
            environment[env_name(key)] = "" if value is None else str(value)
    if loaded.config_file != default_config_file():
        environment["BRAIN_CONFIG"] = str(loaded.config_file)
    return environment


def launch_service(loaded: LoadedConfig) -> subprocess.Popen[bytes]:
    """Start ``brain serve`` in its own session (closing a terminal does not stop it), with
    the settings this client was given: flags travel as environment variables, not argv,
    so an API key never shows in the process list."""
    environment = launch_environment(loaded)
    log_path = service_log(loaded)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "assistant.cli", "serve"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=environment,
            start_new_session=True,
        )


def service_log(loaded: LoadedConfig) -> Path:
    return loaded.settings.log_dir / "service.log"


def _log_tail(loaded: LoadedConfig) -> str:
    try:
        lines = service_log(loaded).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "no log"
    return lines[-1].strip() if lines else "no log"
