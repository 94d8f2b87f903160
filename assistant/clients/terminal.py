"""The plain-terminal clients: ``brain ask``, ``brain listen``, ``brain chat``, ``brain stop``
(``brain tasks`` and delegation are in task_terminal.py)."""

from __future__ import annotations

import asyncio
import signal
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from assistant.clients.connection import ServiceClient, ServiceError, ServiceNotRunning
from assistant.config import LoadedConfig
from assistant.protocol import Update
from assistant.protocol.common import Notice
from assistant.protocol.conversation import (
    MAX_SAY_CHARS,
    Bye,
    Cancel,
    History,
    HistoryItem,
    Left,
    Progress,
    ReplyChunk,
    ReplyEnd,
    ReplyStart,
    Say,
    Status,
    Stop,
    UserSaid,
)
from assistant.protocol.voice import HeardNothing, Listen, Voice, VoiceTimings
from assistant.service.paths import OwnerLock

EXIT_FAILURE = 1
# How long `brain listen` waits for a written reply to be spoken before it leaves.
SPEAKING_WAIT_S = 120.0
# Voice states in which a spoken reply is still on its way out.
BUSY = ("thinking", "speaking", "hearing")
# Stopping waits for the LLM server and the memory store to close.
STOP_WAIT_S = 60.0


def tell(err: TextIO, text: str) -> None:
    print(f"brain: {text}", file=err, flush=True)


async def attach(loaded: LoadedConfig, name: str, err: TextIO) -> ServiceClient | None:
    """Attach (starting the service if needed) to work through it; None after saying why not."""
    try:
        client = await ServiceClient.connect(loaded, name)
    except ServiceError as error:
        tell(err, str(error))
        return None
    if client.other_settings is not None:
        tell(err, client.other_settings)
    return client


def _said_goodbye(left: Left | None, err: TextIO) -> None:
    if left is not None and left.stays:
        tell(err, f"the service keeps running ({left.reason}); `brain stop` stops it")


def _check_length(text: str, err: TextIO) -> bool:
    if len(text) > MAX_SAY_CHARS:
        tell(err, f"not sent: {len(text):,} characters; the limit is {MAX_SAY_CHARS:,}")
        return False
    return True


async def ask(
    loaded: LoadedConfig, text: str, out: TextIO = sys.stdout, err: TextIO = sys.stderr
) -> int:
    """One turn: send ``text``, print the reply as it streams, leave."""
    if not text.strip() or not _check_length(text, err):
        if not text.strip():
            tell(err, "nothing to ask")
        return EXIT_FAILURE
    ref = uuid.uuid4().hex
    return await _one_turn(
        loaded, "ask", Say(text=text, ref=ref), lambda said: said.ref == ref, out, err
    )


async def listen(
    loaded: LoadedConfig, path: Path, out: TextIO = sys.stdout, err: TextIO = sys.stderr
) -> int:
    """One spoken turn: play an audio file into the service's (headless) microphone, print
    what was heard and the reply, and each stage's time."""
    if not path.is_file():
        tell(err, f"no such file: {path}")
        return EXIT_FAILURE

    def heard(said: UserSaid) -> None:
        confidence = f", {said.confidence:.0%} sure" if said.confidence is not None else ""
        out.write(f"you (spoken{confidence})> {said.text}\nbrain> ")

    return await _one_turn(
        loaded,
        "listen",
        Listen(path=str(path.resolve())),
        lambda said: said.client == "voice",
        out,
        err,
        heard,
    )


async def _one_turn(
    loaded: LoadedConfig,
    name: str,
    request: Say | Listen,
    mine: Callable[[UserSaid], bool],
    out: TextIO,
    err: TextIO,
    on_turn: Callable[[UserSaid], None] = lambda said: None,
) -> int:
    """Send ``request``, follow the turn ``mine`` recognises to its reply's end (for a spoken
    turn, until the reply has been spoken), leave."""
    client = await attach(loaded, name, err)
    if client is None:
        return EXIT_FAILURE
    code = EXIT_FAILURE
    spoken = isinstance(request, Listen)
    try:
        await client.send(request)
        turn: int | None = None
        ended = False
        # The stage times arrive while the reply is still being written: said after it, so
        # the two outputs do not run into one line on a terminal.
        timings: str | None = None
        async with asyncio.timeout(None) as deadline:
            async for update in client.updates():
                if isinstance(update, UserSaid) and turn is None and mine(update):
                    turn = update.turn
                    on_turn(update)
                elif isinstance(update, Notice) and update.level != "info" and turn is None:
                    tell(err, update.text)
                    if update.level == "error":
                        break
                elif isinstance(update, Status) and update.state != "ready":
                    tell(err, update.text)
                elif isinstance(update, HeardNothing) and turn is None and spoken:
                    tell(err, f"not heard: {update.reason}")
                    break
                elif isinstance(update, ReplyChunk) and update.turn == turn:
                    out.write(update.text)
                    out.flush()
                elif isinstance(update, VoiceTimings) and update.turn == turn:
                    stages = ", ".join(f"{k} {v:,.0f} ms" for k, v in update.stages_ms.items())
                    timings = f"after the end of speech: {stages}"
                    if ended:
                        tell(err, timings)
                elif isinstance(update, ReplyEnd) and update.turn == turn:
                    if update.error:
                        tell(err, f"no reply: {update.error}")
                        break
                    out.write("\n")
                    out.flush()
                    if timings is not None:
                        tell(err, timings)
                    code = 0
                    if not spoken:
                        break
                    ended = True  # and the reply is being spoken
                    deadline.reschedule(asyncio.get_running_loop().time() + SPEAKING_WAIT_S)
                elif isinstance(update, Voice) and ended and update.state not in BUSY:
                    break
                elif isinstance(update, Bye):
                    tell(err, f"the service stopped: {update.reason}")
                    break
    except TimeoutError:
        tell(err, "the reply was still being spoken; leaving")
    except ServiceError as error:
        tell(err, str(error))
    _said_goodbye(await client.leave(), err)
    return code


def _print_history(items: list[HistoryItem], out: TextIO, shown: int = 10) -> None:
    for item in items[-shown:]:
        out.write(f"{'you' if item.role == 'user' else 'brain'}> {item.text}\n")


class ChatPrinter:
    """Renders the shared conversation for ``brain chat``; knows which turns are its own."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.mine: set[str] = set()
        # Own messages not yet accepted or refused, and own turns not yet answered.
        self.unacknowledged = 0
        self.my_turns: set[int] = set()
        self.replying: int | None = None
        self.answered = asyncio.Event()
        self.answered.set()

    def sent(self, ref: str) -> None:
        self.mine.add(ref)
        self.unacknowledged += 1
        self.answered.clear()

    def show(self, update: Update) -> bool:
        """Print one update; False when the service is gone."""
        match update:
            case UserSaid() if update.ref in self.mine:
                self.unacknowledged -= 1
                self.my_turns.add(update.turn)
            case UserSaid():
                self.out.write(f"\n[{update.client}] you> {update.text}\n")
            case History():
                _print_history(update.items, self.out)
            case ReplyStart():
                self.replying = update.turn
                self.out.write("brain> ")
            case ReplyChunk():
                self.out.write(update.text)
            case ReplyEnd():
                if update.error and not update.text:
                    self.out.write(f"(no reply: {update.error})")
                elif update.interrupted:
                    self.out.write(" [stopped]")
                self.out.write("\n")
                self.replying = None
                self.my_turns.discard(update.turn)
            case Notice(level="error") if self.unacknowledged:
                self.out.write(f"({update.text})\n")
                self.unacknowledged -= 1  # a refusal of one of ours
            case Status() | Notice():
                self.out.write(f"({update.text})\n")
            case Progress() if update.done >= update.total:
                self.out.write(f"({update.label}: done)\n")
            case Bye():
                self.out.write(f"(the service stopped: {update.reason})\n")
                return False
        self.out.flush()
        if not self.unacknowledged and not self.my_turns:
            self.answered.set()
        return True


async def chat(loaded: LoadedConfig, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """A plain REPL on the shared conversation: type a line, read the streamed reply.
    Ctrl+C stops a reply being written; Ctrl+D (or Ctrl+C at the prompt) leaves."""
    client = await attach(loaded, "chat", err)
    if client is None:
        return EXIT_FAILURE
    welcome = client.welcome
    out.write(f"Brain OS: {welcome.text}. Ctrl+C stops a reply, Ctrl+D leaves.\n")
    _print_history(welcome.history, out)
    out.flush()
    printer = ChatPrinter(out)
    loop = asyncio.get_running_loop()
    lines = await _stdin_lines()
    leaving = asyncio.Event()

    cancels: set[asyncio.Task[None]] = set()

    def interrupt() -> None:
        if printer.replying is not None:
            sending = loop.create_task(client.send(Cancel()))
            cancels.add(sending)
            sending.add_done_callback(cancels.discard)
        else:
            leaving.set()

    loop.add_signal_handler(signal.SIGINT, interrupt)

    async def receive() -> None:
        async for update in client.updates():
            if not printer.show(update):
                break
        leaving.set()

    async def send() -> None:
        while line := await lines.readline():
            text = line.decode("utf-8", "replace").strip()
            if text and _check_length(text, err):
                ref = uuid.uuid4().hex
                printer.sent(ref)
                await client.send(Say(text=text, ref=ref))
        # End of input (Ctrl+D, or a file piped in): leave once every reply has arrived.
        await printer.answered.wait()
        leaving.set()

    tasks = [asyncio.create_task(receive()), asyncio.create_task(send())]
    await leaving.wait()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    loop.remove_signal_handler(signal.SIGINT)
    _said_goodbye(await client.leave(), err)
    return 0


async def _stdin_lines() -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=MAX_SAY_CHARS * 4 + 1024)
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


async def stop(loaded: LoadedConfig, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    try:
        client = await ServiceClient.connect(loaded, "stop", start=False)
    except ServiceNotRunning:
        out.write("The Brain OS service is not running.\n")
        return 0
    except ServiceError as error:
        tell(err, str(error))
        return EXIT_FAILURE
    await client.send(Stop())
    async for update in client.updates():
        if isinstance(update, Bye):
            break
    await client.close()
    owner = OwnerLock(loaded.settings.data_dir)
    if not await asyncio.to_thread(owner.wait_left_by, client.welcome.pid, STOP_WAIT_S):
        tell(err, f"the service (pid {client.welcome.pid}) is still shutting down")
        return EXIT_FAILURE
    out.write(f"Stopped the Brain OS service (pid {client.welcome.pid}).\n")
    return 0
