"""Starts a local LLM server, prints its pid, then waits to be killed (tests of orphan cleanup)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from assistant.lifecycle import exit_cleanly_on_signals
from assistant.llm.server import LocalLLMServer, ServerOptions

exit_cleanly_on_signals()
server = LocalLLMServer(ServerOptions(gguf=Path(sys.argv[1]), model_alias="held"))
server.start()
print(server.pid, flush=True)
while True:
    time.sleep(1)
