"""A small MCP server over stdio for the tests: it writes files into the folder named by its
first argument (an action outside the memory store), adds numbers, fails, or sleeps."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("test-files")
SANDBOX = Path(sys.argv[1])


@server.tool()
def write_file(name: str, text: str) -> str:
    """Write text to a file in the sandbox folder."""
    target = SANDBOX / Path(name).name
    target.write_text(text, encoding="utf-8")
    return f"wrote {len(text)} characters to {target.name}"


@server.tool()
def add(a: int, b: int = 2) -> int:
    """Add two numbers."""
    return a + b


@server.tool()
def fail(why: str) -> str:
    """Always fails."""
    raise RuntimeError(f"failed on purpose: {why}")


@server.tool()
def sleep(seconds: float) -> str:
    """Take its time."""
    time.sleep(seconds)
    return "slept"


if __name__ == "__main__":
    server.run("stdio")
