"""``brain mcp --http``: the MCP server over streamable HTTP, on 127.0.0.1 only, behind a bearer
token kept in the data folder (made with ``secrets`` on first use, mode 0600): any program on
the machine can reach the port, so the token is what keeps the memory the user's."""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

HOST = "127.0.0.1"
DEFAULT_PORT = 8765
PATH = "/mcp"
TOKEN_FILE = "mcp_token"
# Open event streams are closed after this long when the server is told to stop.
SHUTDOWN_S = 3


class TokenError(OSError):
    """The token file cannot be used; the message says why and what to do."""


def bearer_token(path: Path) -> str:
    """The token in ``path``, made on first use (32 random bytes, URL-safe, mode 0600)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_token(path)
    token = secrets.token_urlsafe(32)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(token + "\n")
    return token


def _read_token(path: Path) -> str:
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        path.chmod(0o600)  # others could read it: theirs no more
    token = path.read_text(encoding="utf-8").strip()
    if not token:
        raise TokenError(f"the token file {path} is empty; delete it and a new token is made")
    return token


class BearerToken:
    """Refuses (401) every HTTP request that does not carry ``Authorization: Bearer <token>``;
    compared in constant time. The server's start and stop (ASGI lifespan) pass through."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token.encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._allowed(Headers(scope=scope)):
            refusal = JSONResponse(
                {"error": "invalid_token", "error_description": "a valid bearer token is needed"},
                status_code=401,
                headers={"WWW-Authenticate": 'Bearer realm="brain-os"'},
            )
            await refusal(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _allowed(self, headers: Headers) -> bool:
        scheme, _, given = headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and secrets.compare_digest(
            given.strip().encode("utf-8", "replace"), self.token
        )


async def serve_http(server: MCPServer, port: int, token: str) -> None:
    """Serve until told to stop (Ctrl+C, SIGTERM)."""
    app = BearerToken(server.streamable_http_app(streamable_http_path=PATH, host=HOST), token)
    config = uvicorn.Config(
        app,
        host=HOST,
        port=port,
        log_level="warning",
        timeout_graceful_shutdown=SHUTDOWN_S,
    )
    await uvicorn.Server(config).serve()
