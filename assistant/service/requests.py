"""Which handler carries out each kind of request: the service's parts and its desks add
theirs when the service is built, and each request a client sends goes to the one handler
of its type."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from assistant.protocol import Request
from assistant.protocol.common import Wire
from assistant.service.hub import Client

R = TypeVar("R", bound=Wire)


class Requests:
    def __init__(self) -> None:
        self._handlers: dict[type[Wire], Callable[[Client, Any], None]] = {}

    def add(self, kind: type[R], handler: Callable[[Client, R], None]) -> None:
        if kind in self._handlers:
            raise ValueError(f"{kind.__name__} has a handler already")
        self._handlers[kind] = handler

    def kinds(self) -> set[type[Wire]]:
        return set(self._handlers)

    def handle(self, client: Client, request: Request) -> None:
        self._handlers[type(request)](client, request)
