"""Whether the assistant holds a conversation: written conversations of 20-40 turns, each
typed to a fresh `brain serve` with the app's defaults (graph, reflection, day plan, heartbeat
look on; a heartbeat made to tick halfway), every reply judged by the rules in
conversation_rules.py.

    python -m benchmarks.conversation [--profiles fast quality] [--half dev|test]
                                      [--designs plain json_action short_json]
                                      [--only NAME ...] [--turn-timeout-s 120] [--json]

The cases are in benchmarks/data/conversations/: ``dev.json`` is the half to tune on,
``test.json`` the half to run once per change and only report. Per turn the benchmark keeps
the time from sending the message to the first piece of the reply holding a letter or digit
(``first_word_ms``; a turn that fails or times out counts at its timeout), the reply, and what
the agent was shown (the context window it saved, ``context.json``: what it told the agent,
which copies are judged against (the instructions, the persona block, the framing of events and
tool results), and the window "I don't know" is judged against). A turn that needs a tool
passes only if the service's state shows it: a reminder in its list, a task among its tasks.
At the end of each conversation the core memory's human block is read: ``core_kept`` counts
the facts a conversation lists under ``core`` (a diet, an allergy, a partner's name) found there.

``--set KEY=VALUE`` passes other settings to every service (``llm.no_repeat=0.8``).
``--lived-in`` starts every conversation in a copy of the profile's lived-in folder
(benchmarks/lived_in.py: thousands of memories, a conversation already compacted) instead of
an empty one.
``--designs`` runs each conversation under each reply design (``agent.reply_design``; the
app's own choice when not given), and the report's keys become ``<profile>:<design>``.

``--json`` prints ``{"<profile>": {"turns", "passed", "copies", "unknown_but_shown",
"wrong_person", "invented", "wrong", "wrong_tone", "tools_missed", "task_claimed_not_started",
"core_kept", "first_word_ms": {"p50", "p95", "max"}, "half", "conversations"}}``; per-turn
lines go to stderr, ``--log FILE`` writes every turn as JSON lines, and ``--logs DIR`` keeps
each conversation's service log.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.conversation_rules import Case, Seen, Verdict, judge
from benchmarks.stats import percentiles

CASES = Path(__file__).parent / "data" / "conversations"
TURN_TIMEOUT_S = 120.0
# How long a task or a reminder the turn asked for may take to show in the service's state
# after the reply ended (a task is broadcast as it is created).
STATE_WAIT_S = 5.0
# The reply says a background task was started.
_STARTED = re.compile(
    r"\b(?:started|starting|i'll (?:look|go|gather|put|write|work|dig)|i will (?:look|go|gather|"
    r"put|write|work)|working on (?:it|that)|in the background|background task|on it)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W_]")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Conversation:
    name: str
    user: str
    cases: tuple[Case, ...]
    # Words the core memory's human block should hold by the end (any of the "|"-split forms).
    core: tuple[str, ...] = ()


def load(half: str, only: Sequence[str] = ()) -> list[Conversation]:
    data = json.loads((CASES / f"{half}.json").read_text(encoding="utf-8"))
    conversations = [
        Conversation(
            name=item["name"],
            user=item["user"],
            cases=tuple(Case.of(turn) for turn in item["turns"]),
            core=tuple(item.get("core", [])),
        )
        for item in data["conversations"]
    ]
    return [c for c in conversations if not only or c.name in only]


@dataclass
class TurnResult:
    conversation: str
    number: int
    case: Case
    reply: str = ""
    first_word_ms: float = TURN_TIMEOUT_S * 1000
    error: str | None = None
    verdict: Verdict = field(default_factory=Verdict)
    tool_done: bool | None = None
    claimed_task: bool = False
    # When the turn's stages happened, in ms after the service accepted the message.
    stages_ms: dict[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.error is None and self.verdict.passed and self.tool_done is not False

    def row(self) -> dict[str, Any]:
        return {
            "conversation": self.conversation,
            "turn": self.number,
            "say": self.case.say,
            "reply": self.reply,
            "first_word_ms": round(self.first_word_ms),
            "passed": self.passed,
            "error": self.error,
            "tool_done": self.tool_done,
            "reasons": self.verdict.reasons(),
        }


@dataclass
class Watched:
    """What the benchmark has seen of the service's state across the conversation."""

    tasks: set[str] = field(default_factory=set)
    reminders: int = 0


# The persona block as the saved core memory renders it, and a line of a system message that
# lists something shown (a memory, a heartbeat's numbered item) rather than telling the model.
_PERSONA = re.compile(r"<persona[^>]*>(.*?)</persona>", re.DOTALL)
_LISTED = re.compile(r"^\s*(?:-|\d+\.)\s")
# What follows the tag of an event that carries content: a task's outcome, a reminder's words.
_CONTENT_AFTER_TAG = re.compile(r"^(\[(?:task|reminder)[^\]]*\]).*")


def shown_to_agent(data_dir: Path) -> tuple[str, str]:
    """What the saved context window told the agent (its instructions, the persona block, the
    lines of system messages that list nothing: an event's framing, a tool's result), and the
    rest of it (summary, core memory, messages and the memories shown with them)."""
    path = data_dir / "context.json"
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "", ""
    parts = [str(state.get("summary") or "")]
    core = state.get("core_prefix") or state.get("core_snapshot") or ""
    core = json.dumps(core, ensure_ascii=False) if not isinstance(core, str) else core
    parts.append(core)
    parts += [str(message.get("content") or "") for message in state.get("fifo", [])]
    told = [str(state.get("instructions") or ""), *_PERSONA.findall(core)]
    told += [
        _CONTENT_AFTER_TAG.sub(r"\1", line)
        for message in state.get("fifo", [])
        if message.get("role") == "system"
        and not str(message.get("content")).startswith("[summary")
        for line in str(message.get("content") or "").splitlines()
        if not _LISTED.match(line)
    ]
    return "\n".join(told), "\n".join(parts)


async def run_conversation(
    profile: str,
    design: str | None,
    conversation: Conversation,
    root: Path,
    timeout_s: float,
    logs: Path | None = None,
    extra: dict[str, str] | None = None,
    lived: Path | None = None,
    before_stop: Callable[[Path], Awaitable[None]] | None = None,
    pause_s: float = 0.0,
) -> tuple[list[TurnResult], str]:
    """Each message typed to a fresh service (in a copy of the ``lived`` folder: lived_in.py),
    ``pause_s`` after the reply before it ended; the results and the human block at the end.
    ``before_stop`` is awaited with the data folder after the last turn, the service still
    running."""
    from assistant.clients.connection import ServiceClient
    from assistant.config import load_config
    from assistant.protocol.conversation import Stop

    root.mkdir(parents=True, exist_ok=True)
    config_file = root / "config.toml"
    config_file.write_text("", encoding="utf-8")
    data_dir = root / "data"
    if lived is not None and not data_dir.exists():
        from benchmarks.lived_in import copy_into

        copy_into(lived, data_dir)
    flags = {
        "profile": profile,
        "data_dir": str(data_dir),
        "audio.input_device": "none",
        "voice.enabled": "false",
        "service.runtime_dir": str(root / "run"),
    }
    if design is not None:
        flags["agent.reply_design"] = design
    flags.update(extra or {})
    loaded = load_config(flags=flags, environ={}, config_file=config_file)
    service_log = loaded.settings.log_dir / "service.log"
    logged_before = service_log.stat().st_size if service_log.exists() else 0
    client = await ServiceClient.connect(loaded, "conversation-benchmark")
    results: list[TurnResult] = []
    watched = Watched()
    replies: list[str] = []
    said: list[str] = []
    human = ""
    try:
        await _until_ready(client)
        watched.reminders = await _reminder_count(client)
        for number, case in enumerate(conversation.cases, 1):
            if number == len(conversation.cases) // 2 + 1:
                await _tick(client)
            if number > 1:
                await asyncio.sleep(pause_s)
            result = TurnResult(conversation.name, number, case, first_word_ms=timeout_s * 1000)
            said.append(case.say)
            await _turn(client, case, result, watched, timeout_s)
            instructions, shown = shown_to_agent(data_dir)
            shown = shown.replace(case.say, "").replace(result.reply, "")
            seen = Seen(conversation.user, tuple(said), tuple(replies), instructions, shown)
            if result.error is None:
                result.verdict = judge(case, result.reply, seen)
                replies.append(result.reply)
            results.append(result)
            mark = "ok " if result.passed else "BAD"
            log(
                f"  {profile} {conversation.name} {number:2d} {mark} "
                f"{result.first_word_ms:6,.0f} ms | {case.say[:48]!r} -> {result.reply[:90]!r}"
            )
            for reason in result.verdict.reasons() + ([result.error] if result.error else []):
                log(f"        {reason}")
            if result.tool_done is False:
                log(f"        the {case.tool} was not done")
        human = await _human_block(client)
        if before_stop is not None:
            await before_stop(data_dir)
        await client.send(Stop())
        await _until_closed(client)
        await until_gone(client.welcome.pid)
    finally:
        await client.leave()
        if logs is not None and service_log.exists():
            logs.mkdir(parents=True, exist_ok=True)
            target = logs / f"{profile}-{design or 'default'}-{conversation.name}.log"
            with service_log.open("rb") as logged:
                logged.seek(logged_before)
                target.write_bytes(logged.read())
    return results, human


async def _turn(
    client: Any, case: Case, result: TurnResult, watched: Watched, timeout_s: float
) -> None:
    from assistant.protocol.conversation import ReplyChunk, ReplyEnd, Say, UserSaid
    from assistant.protocol.tasks import Tasks

    ref = uuid.uuid4().hex
    started = time.monotonic()
    await client.send(Say(text=case.say, ref=ref))
    number: int | None = None
    tasks_before = set(watched.tasks)
    try:
        async with asyncio.timeout(timeout_s):
            async for update in client.updates():
                if isinstance(update, Tasks):
                    watched.tasks.update(task.id for task in update.tasks)
                elif isinstance(update, UserSaid) and update.ref == ref:
                    number = update.turn
                elif isinstance(update, ReplyChunk) and update.turn == number:
                    if _WORD.search(update.text) and result.first_word_ms >= timeout_s * 1000:
                        result.first_word_ms = (time.monotonic() - started) * 1000
                elif isinstance(update, ReplyEnd) and update.turn == number:
                    result.reply = update.text
                    result.error = update.error
                    result.stages_ms = dict(update.stages_ms)
                    break
    except TimeoutError:
        result.error = f"no reply in {timeout_s:.0f} s"
    if result.error is not None:
        result.first_word_ms = timeout_s * 1000
    if case.tool == "reminder":
        count = await _reminder_count(client)
        result.tool_done = count > watched.reminders
        watched.reminders = count
    elif case.tool == "task":
        result.tool_done = await _new_task(client, watched, tasks_before)
        result.claimed_task = bool(_STARTED.search(result.reply))


async def _new_task(client: Any, watched: Watched, before: set[str]) -> bool:
    from assistant.protocol.tasks import GetTasks, Tasks

    if watched.tasks - before:
        return True
    await client.send(GetTasks())
    try:
        async with asyncio.timeout(STATE_WAIT_S):
            async for update in client.updates():
                if isinstance(update, Tasks):
                    watched.tasks.update(task.id for task in update.tasks)
                    if watched.tasks - before:
                        return True
    except TimeoutError:
        pass
    return bool(watched.tasks - before)


async def _answer(client: Any, request: Any) -> Any:
    """The answer to a request that carries a ref (other updates meanwhile are dropped)."""
    await client.send(request)
    async with asyncio.timeout(60):
        async for update in client.updates():
            if getattr(update, "ref", None) == request.ref:
                return update
    return None


async def _reminder_count(client: Any) -> int:
    from assistant.protocol.tasks import GetReminders, Reminders

    answer = await _answer(client, GetReminders(ref=uuid.uuid4().hex))
    return len(answer.rows) if isinstance(answer, Reminders) else 0


async def _human_block(client: Any) -> str:
    from assistant.protocol.memory import CoreBlocks, CoreQuery

    answer = await _answer(client, CoreQuery(ref=uuid.uuid4().hex))
    if not isinstance(answer, CoreBlocks):
        return ""
    return "\n".join(block.value for block in answer.blocks if block.label == "human")


async def _tick(client: Any) -> None:
    """Make the heartbeat tick, as it would every few minutes in the app."""
    from assistant.protocol.tasks import Tick

    await client.send(Tick())


async def _until_closed(client: Any) -> None:
    """Until the service has stopped (it closes the connection), so its folder can go."""
    try:
        async with asyncio.timeout(60):
            async for _ in client.updates():
                pass
    except (TimeoutError, OSError):
        log("  the service did not stop within 60 s")


async def until_gone(pid: int, timeout_s: float = 60.0) -> bool:
    """Until the service's process has exited (whether it did): it saves the conversation's KV
    cache into the data folder after the connection closes, and a folder moved or removed
    before that (the lived-in build renames its folder) lost it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline:
        if exited(pid):
            return True
        await asyncio.sleep(0.2)
    log(f"  the service (pid {pid}) had not exited after {timeout_s:.0f} s")
    return False


def exited(pid: int) -> bool:
    """Whether process ``pid`` has exited. A service this process launched stays a zombie
    (still there to ``kill(pid, 0)``) until it is reaped, so a child of ours is reaped here."""
    try:
        reaped, _ = os.waitpid(pid, os.WNOHANG)
        if reaped == pid:
            return True
    except ChildProcessError:
        pass  # not our child: another process launched it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    return False


async def _until_ready(client: Any) -> None:
    from assistant.protocol.conversation import Status

    if client.welcome.state == "ready":
        return
    async for update in client.updates():
        if isinstance(update, Status) and update.state == "ready":
            return


def core_kept(conversation: Conversation, human: str) -> tuple[int, int]:
    lowered = human.lower()
    kept = sum(
        any(form.lower() in lowered for form in fact.split("|")) for fact in conversation.core
    )
    return kept, len(conversation.core)


def score(results: Sequence[TurnResult], kept: Sequence[tuple[int, int]]) -> dict[str, Any]:
    tasks = [r for r in results if r.case.tool == "task"]
    return {
        "turns": len(results),
        "passed": sum(r.passed for r in results),
        "copies": sum(bool(r.verdict.copies) for r in results),
        "unknown_but_shown": sum(r.verdict.unknown_but_shown for r in results),
        "wrong_person": sum(bool(r.verdict.wrong_person) for r in results),
        "invented": sum(bool(r.verdict.invented) for r in results),
        "wrong": sum(bool(r.verdict.wrong) for r in results),
        "wrong_tone": sum(r.verdict.wrong_tone is not None for r in results),
        "failed": sum(r.error is not None for r in results),
        "tools_missed": sum(r.tool_done is False for r in results),
        "task_claimed_not_started": sum(r.claimed_task and not r.tool_done for r in tasks),
        "core_kept": f"{sum(k for k, _ in kept)}/{sum(n for _, n in kept)}",
        "first_word_ms": percentiles([r.first_word_ms for r in results]),
    }


def bench_profile(
    profile: str,
    design: str | None,
    conversations: Sequence[Conversation],
    timeout_s: float,
    turn_log: Path | None,
    logs: Path | None = None,
    extra: dict[str, str] | None = None,
    lived_in: bool = False,
) -> dict[str, Any]:
    lived = None
    if lived_in:
        from benchmarks.lived_in import lived_in as lived_folder

        lived = lived_folder(profile)
    results: list[TurnResult] = []
    kept: list[tuple[int, int]] = []
    for conversation in conversations:
        with tempfile.TemporaryDirectory(
            prefix="brain-conversation-", ignore_cleanup_errors=True
        ) as folder:
            log(f"{profile} {design or ''}: {conversation.name} ({len(conversation.cases)} turns)")
            done, human = asyncio.run(
                run_conversation(
                    profile, design, conversation, Path(folder), timeout_s, logs, extra, lived
                )
            )
        results += done
        kept.append(core_kept(conversation, human))
        log(f"  human block: {human.strip()!r}")
        if turn_log is not None:
            with turn_log.open("a", encoding="utf-8") as out:
                for result in done:
                    row = {"profile": profile, "design": design, **result.row()}
                    out.write(json.dumps(row) + "\n")
    return score(results, kept)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", nargs="+", default=["fast", "quality"])
    parser.add_argument("--half", choices=["dev", "test"], default="dev")
    parser.add_argument(
        "--designs", nargs="*", default=[], choices=["plain", "json_action", "short_json"]
    )
    parser.add_argument("--only", nargs="*", default=[], help="conversations by name")
    parser.add_argument("--turn-timeout-s", type=float, default=TURN_TIMEOUT_S)
    parser.add_argument("--log", type=Path, default=None, help="every turn as JSON lines")
    parser.add_argument(
        "--set", nargs="*", default=[], metavar="KEY=VALUE", help="other settings (all runs)"
    )
    parser.add_argument("--logs", type=Path, default=None, help="keep each service log here")
    parser.add_argument(
        "--lived-in", action="store_true", help="start each conversation in a lived-in folder"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    conversations = load(args.half, args.only)
    if not conversations:
        parser.error(f"no conversation named {args.only} in the {args.half} half")
    report: dict[str, Any] = {}
    designs: list[str | None] = list(args.designs) or [None]
    extra = dict(item.split("=", 1) for item in args.set)
    for profile in args.profiles:
        for design in designs:
            figures = bench_profile(
                profile,
                design,
                conversations,
                args.turn_timeout_s,
                args.log,
                args.logs,
                extra,
                args.lived_in,
            )
            figures["half"] = args.half
            figures["lived_in"] = args.lived_in
            figures["conversations"] = len(conversations)
            report[profile if design is None else f"{profile}:{design}"] = figures
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for profile, figures in report.items():
            words = figures["first_word_ms"]
            print(
                f"{profile}: {figures['passed']}/{figures['turns']} passed, copies "
                f"{figures['copies']}, unknown but shown {figures['unknown_but_shown']}, wrong "
                f"person {figures['wrong_person']}, invented {figures['invented']}, wrong "
                f"{figures['wrong']}, wrong tone {figures['wrong_tone']}, tools missed "
                f"{figures['tools_missed']}, core kept "
                f"{figures['core_kept']}; first word p50 {words['p50']:,.0f} ms, p95 "
                f"{words['p95']:,.0f}, max {words['max']:,.0f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
