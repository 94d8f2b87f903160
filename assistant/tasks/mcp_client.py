"""Sub-agents' tools from MCP servers (stdio transport, the official ``mcp`` package).

Each server listed in ``tasks.mcp_servers`` is started for a task when the task starts and
stopped when it ends, so a server that hangs or crashes takes no other task with it. The
session runs on its own event loop thread; the sub-agent's worker thread calls it and waits.
Every MCP tool acts outside the memory store, so each call is put to the user first.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, PaginatedRequestParams, TextContent
from pydantic import Field, create_model

from assistant.agent.tools import Arguments, Stores, Tool
from assistant.settings import McpServerSettings

log = logging.getLogger(__name__)

# How often a caller waiting on a tool checks whether its task was cancelled.
CANCEL_POLL_S = 0.1
CLOSE_TIMEOUT_S = 5.0
_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list[Any],
    "object": dict[str, Any],
}


class McpError(RuntimeError):
    """An MCP server that could not be reached or a call that failed; one line, for the model
    and the log."""


@dataclass(frozen=True)
class RemoteTool:
    server: str
    name: str
    description: str
    input_schema: dict[str, Any]


_Call = tuple[str, dict[str, Any], concurrent.futures.Future[CallToolResult]]


class McpConnection:
    """One MCP server, started over stdio, listed, and called until ``close``."""

    def __init__(
        self, server: McpServerSettings, timeout_s: float, log_dir: Path | None = None
    ) -> None:
        self.server = server
        self.timeout_s = timeout_s
        self.log_dir = log_dir
        self._ready: concurrent.futures.Future[list[RemoteTool]] = concurrent.futures.Future()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._calls: asyncio.Queue[_Call | None] | None = None
        self._serving: asyncio.Task[None] | None = None
        # A call is in progress on the server.
        self._busy = False
        self._thread: threading.Thread | None = None

    def open(self) -> list[RemoteTool]:
        """Start the server and list its tools; raises :class:`McpError`."""
        self._thread = threading.Thread(
            target=self._main, name=f"mcp-{self.server.name}", daemon=True
        )
        self._thread.start()
        try:
            return self._ready.result(timeout=self.timeout_s)
        except concurrent.futures.TimeoutError:
            self.close()
            raise McpError(
                f"MCP server {self.server.name} did not answer within {self.timeout_s:.0f} s"
            ) from None

    def call(self, tool: str, arguments: dict[str, Any], cancel: threading.Event) -> str:
        """Run one tool; its text content, or :class:`McpError`. Cancelling stops the server."""
        if self._loop is None or self._calls is None or self._loop.is_closed():
            raise McpError(f"MCP server {self.server.name} is not running")
        future: concurrent.futures.Future[CallToolResult] = concurrent.futures.Future()
        try:
            self._loop.call_soon_threadsafe(self._calls.put_nowait, (tool, arguments, future))
        except RuntimeError:  # its loop has just ended
            raise McpError(f"MCP server {self.server.name} has stopped") from None
        while True:
            try:
                result = future.result(timeout=CANCEL_POLL_S)
                break
            except concurrent.futures.TimeoutError:
                if cancel.is_set():
                    self.close()
                    raise McpError(f"{tool} was stopped: the task was cancelled") from None
            except McpError:
                raise
            except Exception as error:
                raise McpError(f"{tool} failed: {_one_line(error)}") from None
        text = _text_of(result)
        if result.is_error:
            raise McpError(f"{tool} reported an error: {text}")
        return text

    def close(self) -> None:
        """Stop the server: at once if a call is still running (a cancelled task's)."""
        loop, calls, serving = self._loop, self._calls, self._serving
        if loop is None or calls is None or serving is None:
            return
        with contextlib.suppress(RuntimeError):  # its loop has ended already
            loop.call_soon_threadsafe(calls.put_nowait, None)
            if self._busy:
                loop.call_soon_threadsafe(serving.cancel)
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(CLOSE_TIMEOUT_S)

    # On the connection's own thread

    def _main(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as error:  # anything, so that ``open`` never waits for nothing
            log.warning("MCP server %s: %s", self.server.name, _one_line(error))
            if not self._ready.done():
                self._ready.set_exception(
                    McpError(f"MCP server {self.server.name} failed: {_one_line(error)}")
                )

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._calls = asyncio.Queue()
        self._serving = asyncio.current_task()
        server = self.server
        parameters = StdioServerParameters(
            command=server.command, args=list(server.args), env=dict(server.env) or None
        )
        with self._errlog() as errlog:
            async with (
                stdio_client(parameters, errlog=errlog) as (read, write),
                ClientSession(read, write, read_timeout_seconds=self.timeout_s) as session,
            ):
                await session.initialize()
                self._ready.set_result(await self._list(session))
                while (item := await self._calls.get()) is not None:
                    name, arguments, future = item
                    self._busy = True
                    try:
                        result = await session.call_tool(name, arguments)
                    except Exception as error:
                        future.set_exception(error)
                    else:
                        future.set_result(result)
                    finally:
                        self._busy = False

    async def _list(self, session: ClientSession) -> list[RemoteTool]:
        tools: list[RemoteTool] = []
        cursor: str | None = None
        while True:
            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            listed = await session.list_tools(params=params)
            tools += [
                RemoteTool(self.server.name, t.name, (t.description or "").strip(), t.input_schema)
                for t in listed.tools
            ]
            cursor = listed.next_cursor
            if not cursor:
                return tools

    def _errlog(self) -> TextIO:
        """Where the server's own stderr goes: a log file, not the service's terminal."""
        if self.log_dir is None:
            return open(os.devnull, "w")
        self.log_dir.mkdir(parents=True, exist_ok=True)
        return (self.log_dir / f"mcp-{self.server.name}.log").open("a", encoding="utf-8")


def _text_of(result: CallToolResult) -> str:
    parts = [
        block.text if isinstance(block, TextContent) else f"[{block.type} content]"
        for block in result.content
    ]
    if not parts and result.structured_content is not None:
        parts.append(str(result.structured_content))
    return "\n".join(parts).strip() or "(no output)"


def _one_line(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup) and error.exceptions:
        return _one_line(error.exceptions[0])
    text = " ".join(str(error).split())
    return text or type(error).__name__


def tool_name(remote: RemoteTool) -> str:
    """The name the model calls it by: the server's name and the tool's."""
    return f"{remote.server}__{remote.name}"


def arguments_model(remote: RemoteTool) -> type[Arguments]:
    """A pydantic model of the tool's JSON-schema arguments, so its calls are held to the same
    grammar and checked the same way as the built-in tools' (properties keep their names
    through aliases; a property not given is left for the server's default)."""
    schema = remote.input_schema
    required = set(schema.get("required", []))
    fields: dict[str, Any] = {}
    for index, (name, spec) in enumerate(dict(schema.get("properties", {})).items()):
        kind = _python_type(spec if isinstance(spec, dict) else {})
        description = spec.get("description") if isinstance(spec, dict) else None
        if name in required:
            fields[f"p{index}"] = (kind, Field(alias=name, description=description))
        else:
            fields[f"p{index}"] = (kind | None, Field(None, alias=name, description=description))
    model: type[Arguments] = create_model(  # type: ignore[call-overload]
        f"{remote.server}_{remote.name}_arguments", __base__=Arguments, **fields
    )
    return model


def _python_type(spec: dict[str, Any]) -> Any:
    if isinstance(spec.get("enum"), list) and spec["enum"]:
        return Literal[tuple(spec["enum"])]
    options = spec.get("anyOf")
    if isinstance(options, list):
        typed = [o for o in options if isinstance(o, dict) and o.get("type") != "null"]
        if typed:
            return _python_type(typed[0])
    kind = spec.get("type")
    return _JSON_TYPES.get(kind, Any) if isinstance(kind, str) else Any


def mcp_tools(
    connection: McpConnection, remotes: list[RemoteTool], cancel: threading.Event
) -> list[Tool]:
    def runner(remote: RemoteTool) -> Callable[[Stores, Arguments], str]:
        def run(_: Stores, arguments: Arguments) -> str:
            values = arguments.model_dump(by_alias=True, exclude_none=True)
            return connection.call(remote.name, values, cancel)

        return run

    return [
        Tool(
            tool_name(remote),
            f"{remote.description or remote.name} (MCP server {remote.server}; "
            "the user is asked first)",
            arguments_model(remote),
            runner(remote),
            confirm=True,
        )
        for remote in remotes
    ]
