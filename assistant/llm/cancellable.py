"""Stopping a reply the moment the user interrupts, even before its first piece arrives.

Reading a long prompt takes the local model seconds before it streams anything; a check
between pieces would make a barge-in wait for all of that. So the stream is read on a helper
thread and handed over through a queue: the caller stops waiting as soon as ``cancel`` is
set, and the helper closes the stream at its next piece (which closes the HTTP connection, and
the server stops writing). A caller that stops reading (closes the iterator) stops it the same
way.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

Item = TypeVar("Item")

POLL_S = 0.02


@dataclass(frozen=True)
class _Failed:
    error: BaseException


class _Done:
    pass


@dataclass(frozen=True)
class _Piece(Generic[Item]):
    item: Item


def cancellable(stream: Iterator[Item], cancel: threading.Event) -> Generator[Item, None, None]:
    """The items of ``stream`` until it ends or ``cancel`` is set; its errors re-raised here."""
    handed: queue.Queue[_Piece[Item] | _Failed | _Done] = queue.Queue()
    abandoned = threading.Event()

    def pump() -> None:
        try:
            for item in stream:
                handed.put(_Piece(item))
                if cancel.is_set() or abandoned.is_set():
                    break
        except BaseException as error:  # handed to the caller's thread, raised there
            handed.put(_Failed(error))
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
            handed.put(_Done())

    threading.Thread(target=pump, name="llm-stream", daemon=True).start()
    try:
        while True:
            try:
                handed_over = handed.get(timeout=POLL_S)
            except queue.Empty:
                if cancel.is_set():
                    return
                continue
            if isinstance(handed_over, _Done):
                return
            if isinstance(handed_over, _Failed):
                raise handed_over.error
            yield handed_over.item
    finally:
        abandoned.set()
