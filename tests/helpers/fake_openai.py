"""A scripted OpenAI-compatible endpoint on 127.0.0.1 for testing failure handling."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Behaviour = Literal[
    "ok", "error500", "slow", "not_json", "stream", "slow_stream", "script", "route"
]
# Seconds between the words of a "slow_stream" reply.
SLOW_WORD_S = 0.15
# One scripted streamed reply ("script"): the ``delta`` of each chunk, in order.
Script = Sequence[dict[str, object]]
# "route": the reply's text chosen from the request's body (its messages, response_format).
Router = Callable[[dict[str, Any]], str]


def completion(content: str) -> dict[str, object]:
    return {
        "id": "cmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class ScriptedEndpoint:
    def __init__(
        self,
        behaviour: Behaviour,
        reply: str = "scripted reply",
        script: Sequence[Script] = (),
        router: Router | None = None,
    ) -> None:
        self.behaviour = behaviour
        self.router = router
        self.reply = reply
        # "script": the n-th request gets the n-th reply (the last one repeats).
        self.script = list(script)
        self.requests: list[dict[str, object]] = []
        # Streams the client closed before their end.
        self.closed_early = 0

    def handler(self) -> type[BaseHTTPRequestHandler]:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                endpoint.requests.append(body)
                if endpoint.behaviour == "error500":
                    self._json(500, {"error": {"message": "model crashed", "type": "server_error"}})
                elif endpoint.behaviour == "slow":
                    time.sleep(3)
                    self._json(200, completion(endpoint.reply))
                elif endpoint.behaviour == "not_json":
                    self._json(200, completion("this is {not json"))
                elif endpoint.behaviour == "script":
                    script = endpoint.script
                    self._deltas(script[min(len(endpoint.requests), len(script)) - 1])
                elif endpoint.behaviour == "route" and endpoint.router is not None:
                    text = endpoint.router(body)
                    if body.get("stream"):
                        self._deltas([{"content": text}])
                    else:
                        self._json(200, completion(text))
                elif body.get("stream"):
                    self._stream(endpoint.reply, endpoint.behaviour == "slow_stream")
                else:
                    self._json(200, completion(endpoint.reply))

            def _json(self, status: int, payload: dict[str, object]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, text: str, slowly: bool) -> None:
                self._deltas([{"content": word + " "} for word in text.split(" ")], slowly)

            def _deltas(self, deltas: Script, slowly: bool = False) -> None:
                """An SSE chat-completion stream, one chunk per delta."""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                try:
                    for delta in deltas:
                        chunk = {
                            "id": "c",
                            "object": "chat.completion.chunk",
                            "created": 0,
                            "model": "scripted",
                            "choices": [{"index": 0, "delta": delta}],
                        }
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                        self.wfile.flush()
                        if slowly:
                            time.sleep(SLOW_WORD_S)
                    self.wfile.write(b"data: [DONE]\n\n")
                except (BrokenPipeError, ConnectionResetError):
                    # The client closed the stream (a cancelled request).
                    endpoint.closed_early += 1

        return Handler


@contextmanager
def scripted_endpoint(
    behaviour: Behaviour,
    reply: str = "scripted reply",
    script: Sequence[Script] = (),
    router: Router | None = None,
) -> Iterator[tuple[str, ScriptedEndpoint]]:
    """Yields the base URL (…/v1) of a running scripted endpoint."""
    endpoint = ScriptedEndpoint(behaviour, reply, script, router)
    server = ThreadingHTTPServer(("127.0.0.1", 0), endpoint.handler())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", endpoint
    finally:
        server.shutdown()
        server.server_close()
