"""The clients attached to the service."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from assistant.protocol import encode
from assistant.protocol.common import Wire


@dataclass
class Client:
    name: str
    writer: asyncio.StreamWriter

    def send(self, message: Wire) -> None:
        if not self.writer.is_closing():
            self.writer.write(encode(message))
