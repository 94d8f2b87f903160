"""The clients attached to the service: each connection says hello, is greeted, and its
requests go to their handlers; updates go to every client."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import ValidationError

from assistant.protocol import Request, decode_request, describe, encode
from assistant.protocol.common import PROTOCOL_VERSION, Notice, ProtocolError, Wire
from assistant.protocol.conversation import Hello, Leave, Left

log = logging.getLogger(__name__)

HELLO_TIMEOUT_S = 10.0


@dataclass
class Client:
    name: str
    writer: asyncio.StreamWriter

    def send(self, message: Wire) -> None:
        if not self.writer.is_closing():
            self.writer.write(encode(message))


class Hub:
    def __init__(
        self,
        handle: Callable[[Client, Request], None],
        greet: Callable[[Client], None],
        background: Callable[[], bool],
        pending: Callable[[], str | None],
        left: Callable[[], None],
    ) -> None:
        """``handle`` carries out a client's request; ``greet`` sends a client that attached
        what it needs to show; ``background`` says whether the service stays up without
        clients (``service.background``), ``pending`` what work keeps it up meanwhile;
        ``left`` is told when a client left."""
        self.handle = handle
        self.greet = greet
        self.background = background
        self.pending = pending
        self.left = left
        self.clients: list[Client] = []
        self.ever_connected = False

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        client: Client | None = None
        try:
            line = await asyncio.wait_for(reader.readline(), HELLO_TIMEOUT_S)
            hello = self._hello(line, writer)
            if hello is None:
                return
            client = Client(hello.client, writer)
            self.clients.append(client)
            self.ever_connected = True
            self.greet(client)
            log.info("%s attached (%d attached)", client.name, len(self.clients))
            while line := await reader.readline():
                try:
                    request = decode_request(line)
                except (ProtocolError, ValidationError) as error:
                    client.send(Notice(text=describe(error), level="error"))
                    continue
                self.handle(client, request)
                await writer.drain()
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            pass
        except ValueError:  # a line longer than MAX_LINE_BYTES: the stream cannot go on
            if client is not None:
                client.send(Notice(text="message too long; disconnecting", level="error"))
        finally:
            writer.close()
            # A connection that never said hello (a probe) does not count as a client leaving.
            if client is not None:
                self.clients.remove(client)
                log.info("%s left (%d attached)", client.name, len(self.clients))
                self.left()

    def _hello(self, line: bytes, writer: asyncio.StreamWriter) -> Hello | None:
        try:
            hello = decode_request(line)
        except (ProtocolError, ValidationError) as error:
            hello_error = describe(error)
        else:
            if not isinstance(hello, Hello):
                hello_error = "the first message must be hello"
            elif hello.version != PROTOCOL_VERSION:
                hello_error = (
                    f"protocol version {hello.version} is not supported; this service speaks "
                    f"version {PROTOCOL_VERSION} (restart it with `brain stop`)"
                )
            else:
                return hello
        writer.write(encode(Notice(text=hello_error, level="error")))
        return None

    def broadcast(self, message: Wire) -> None:
        for client in self.clients:
            client.send(message)

    def stays_without(self, leaving: Client | None) -> tuple[bool, str]:
        others = [c for c in self.clients if c is not leaving]
        if others:
            return True, f"{len(others)} other client{'s' if len(others) > 1 else ''} attached"
        if self.background():
            return True, "service.background = true"
        pending = self.pending()
        if pending:
            return True, f"{pending}, then it stops"
        return False, "no work pending"

    def leave(self, client: Client, request: Leave) -> None:
        stays, reason = self.stays_without(client)
        client.send(Left(stays=stays, reason=reason))

    def close(self) -> None:
        for client in self.clients:
            client.writer.close()
