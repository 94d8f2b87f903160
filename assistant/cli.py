"""The ``brain`` command: the app, and the tools around it (config, doctor, models)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from assistant.config import (
    ConfigError,
    LoadedConfig,
    add_setting_flags,
    flags_from_namespace,
    load_config,
    render,
)
from assistant.lifecycle import exit_cleanly_on_signals
from assistant.llm.server import LLMServerError, stop_all_servers
from models import ModelError, Progress

EXIT_FAILURE = 1
EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="brain", description="Brain OS: a voice-first personal assistant, offline."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        add_setting_flags(sub)
        return sub

    command("run", "open the terminal app (the default)")
    config = command("config", "print the effective settings and where each came from")
    config.add_argument("--json", action="store_true", help="print one JSON object")
    doctor = command("doctor", "load every part of the profile and prove that it works")
    doctor.add_argument("--json", action="store_true", help="print one JSON object")
    command("models", "assemble and verify the profile's model weights")
    command("serve", "run the assistant service (clients start it when needed)")
    command("chat", "talk to the assistant in this terminal (plain text, streamed)")
    ask = command("ask", "send one message, print the reply, exit")
    ask.add_argument("text", nargs="+", help="the message")
    ask.add_argument(
        "--delegate",
        action="store_true",
        help="hand the text to a background sub-agent as a task and follow it to its result",
    )
    listen = command("listen", "speak an audio file to the assistant (headless voice), exit")
    listen.add_argument("file", type=Path, help="a WAV (or any audio ffmpeg reads)")
    tasks = command("tasks", "list what the service is working on and the delegated tasks")
    tasks.add_argument("--json", action="store_true", help="print one JSON object")
    tasks.add_argument("--cancel", metavar="ID", help="cancel a queued or running task")
    tasks.add_argument(
        "--allow", metavar="ID", help="let a waiting task run the call it asked about"
    )
    tasks.add_argument("--deny", metavar="ID", help="refuse a waiting task's call")
    tasks.add_argument(
        "--tick", action="store_true", help="make the heartbeat tick now (the agent looks too)"
    )
    command("stop", "stop the assistant service")
    mcp = command(
        "mcp", "serve the memory to other AI tools over MCP (stdio; --http for streamable HTTP)"
    )
    mcp.add_argument(
        "--http",
        action="store_true",
        help="serve streamable HTTP on 127.0.0.1, behind a bearer token kept in the data folder",
    )
    mcp.add_argument(
        "--port", type=int, default=None, metavar="N", help="the HTTP port (default 8765)"
    )
    export = command("export", "write the memory and the knowledge graph out to files")
    export.add_argument(
        "--vault", type=Path, help="a new folder: an Obsidian vault, a note per memory and entity"
    )
    export.add_argument("--jsonl", type=Path, help="every memory, as JSON Lines (restorable)")
    export.add_argument(
        "--graph-jsonl", type=Path, help="the knowledge graph's entities and facts, as JSON Lines"
    )
    add_setting_flags(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    exit_cleanly_on_signals()
    try:
        loaded = load_config(flags_from_namespace(args), config_file=_config_path(args))
    except ConfigError as error:
        print(f"brain: configuration error: {error}", file=sys.stderr)
        return EXIT_USAGE
    handlers = {
        None: _run_app,
        "run": _run_app,
        "config": _show_config,
        "doctor": _doctor,
        "models": _models,
        "serve": _serve,
        "chat": _chat,
        "ask": _ask,
        "listen": _listen,
        "tasks": _tasks,
        "stop": _stop,
        "mcp": _mcp,
        "export": _export,
    }
    try:
        return handlers[args.command](loaded, args)
    except (ModelError, LLMServerError) as error:
        print(f"brain: {error}", file=sys.stderr)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        return 130
    finally:
        stop_all_servers()


def _config_path(args: argparse.Namespace) -> Path | None:
    given = getattr(args, "config_file", None)
    return Path(given) if given else None


def _run_app(loaded: LoadedConfig, args: argparse.Namespace) -> int:
    from ui.app import BrainApp

    app = BrainApp(loaded)
    app.run()
    return app.return_code or 0


def _serve(loaded: LoadedConfig, args: argparse.Namespace) -> int:
    from assistant.service.server import run_service

    flags, config_file = flags_from_namespace(args), _config_path(args)
    return run_service(loaded, lambda: load_config(flags, config_file=config_file))


def _chat(loaded: LoadedConfig, args: argparse.Namespace) -> int:
    from assistant.clients.terminal import chat

    return asyncio.run(chat(loaded))


def _ask(loaded: LoadedConfig, args: argparse.Namespace) -> int:
    text = " ".join(args.text)
    if args.delegate:
        from assistant.clients.task_terminal import delegate

        return asyncio.run(delegate(loaded, text))
    from assistant.clients.terminal import ask

    return asyncio.run(ask(loaded, text))


def _export(loaded: LoadedConfig, args: argparse.Namespace) -> int:
    """Read the data folder directly (reading needs no service, and does not disturb one)."""
    from assistant.model_paths import ProfileModels
    from assistant.parts import load_embedder
    from memory.database import DatabaseError, open_database
    from memory.export import export_jsonl, export_markdown
    from memory.graph.export import export_graph_jsonl
    from memory.graph.store import GraphStore
    from memory.locking import WriteLock
    from memory.stream import MemoryStream

    if not (args.vault or args.jsonl or args.graph_jsonl):
        print("brain export: say where: --vault DIR, --jsonl FILE, --graph-jsonl FILE")
        return EXIT_USAGE
    settings = loaded.settings
    data = settings.data_dir
    embedder = load_embedder(settings, ProfileModels(settings).embedder())
    try:
        database = open_database(data)
        lock = WriteLock(data / "memory.lock")
        stream = MemoryStream(database, lock, embedder)
        graph = GraphStore(database, lock, embedder)
        try:
            if args.jsonl:
                count = export_jsonl(stream, args.jsonl)
                print(f"{count} memories written to {args.jsonl}")
            if args.vault:
                notes = export_markdown(stream, args.vault, graph)
                print(f"{notes} notes (memories and entities) written to {args.vault}")
            if args.graph_jsonl:
                entities, facts = export_graph_jsonl(graph, args.graph_jsonl)
                print(f"{entities} entities and {facts} facts written to {args.graph_jsonl}")
        finally:
            stream.close()
    except (DatabaseError, OSError, ValueError) as error:
        print(f"brain export: {error}", file=sys.stderr)
        return EXIT_FAILURE
    return 0


def _listen(loaded: LoadedConfig, args: argparse.Namespace) -> int:
    from assistant.clients.terminal import listen

    return asyncio.run(listen(loaded, args.file))


def _tasks(loaded: LoadedConfig, args: argparse.Namespace) -> int:
    from assistant.clients.task_terminal import answer_approval, cancel, tasks, tick

    if args.tick:
        return asyncio.run(tick(loaded))
    if args.cancel:
        return asyncio.run(cancel(loaded, args.cancel))
    if args.allow or args.deny:
        return asyncio.run(answer_approval(loaded, args.allow or args.deny, bool(args.allow)))
    return asyncio.run(tasks(loaded, args.json))


def _stop(loaded: LoadedConfig, args: argparse.Namespace) -> int:
    from assistant.clients.terminal import stop

    return asyncio.run(stop(loaded))


def _mcp(loaded: LoadedConfig, args: argparse.Namespace) -> int:
    from assistant.clients.mcp_http import DEFAULT_PORT
    from assistant.clients.mcp_server import run

    if args.port is not None and not args.http:
        print("brain mcp: --port is for --http", file=sys.stderr)
        return EXIT_USAGE
    return run(loaded, args.http, args.port or DEFAULT_PORT)


def _show_config(loaded: LoadedConfig, args: argparse.Namespace) -> int:
    rows = render(loaded)
    if args.json:
        print(
            json.dumps(
                {
                    "config_file": str(loaded.config_file),
                    "settings": {key: {"value": v, "source": s} for key, v, s in rows},
                }
            )
        )
        return 0
    print(f"# config file: {loaded.config_file}")
    print("# each key is also an environment variable (llm.base_url: BRAIN_LLM_BASE_URL)")
    print("# and a flag (llm.base_url: --llm-base-url); flag > environment > file > default")
    width = max(len(key) for key, _, _ in rows)
    for key, value, source in rows:
        print(f"{key:<{width}} = {value or '(unset)':<24} # {source}")
    return 0


def _doctor(loaded: LoadedConfig, args: argparse.Namespace) -> int:
    from assistant.doctor import CheckResult, Doctor, results_json

    def show(result: CheckResult) -> None:
        if not args.json:
            print(result.line(), flush=True)

    if not args.json:
        print(f"brain doctor: profile {loaded.settings.profile}", flush=True)
    progress = None if args.json else _print_progress
    results = Doctor(loaded.settings, progress).run(show)
    failed = [r.name for r in results if not r.ok]
    if args.json:
        print(json.dumps(results_json(loaded.settings, results)))
    elif failed:
        print(f"brain doctor: FAILED: {', '.join(failed)}")
    else:
        print("brain doctor: every part works")
    return EXIT_FAILURE if failed else 0


def _models(loaded: LoadedConfig, args: argparse.Namespace) -> int:
    from assistant.model_paths import ProfileModels

    models = ProfileModels(loaded.settings, _print_progress)
    stt, llm, tts, embedder = models.stt(), models.llm(), models.tts(), models.embedder()
    rows = [
        ("stt", stt.name, str(stt.directory)),
        ("llm", llm.name, str(llm.gguf)),
        ("tts", tts.name, str(tts.model)),
        ("embedder", embedder.name, str(embedder.model)),
    ]
    print(f"profile {loaded.settings.profile}: every weight is present and verified")
    for part, name, path in rows:
        print(f"{part:<9} {name:<36} {path}")
    return 0


def _print_progress(progress: Progress) -> None:
    percent = 100 * progress.done / max(progress.total, 1)
    end = "\n" if progress.done >= progress.total else ""
    print(
        f"\r{progress.action} {progress.weight_id}/{progress.file_name}: {percent:5.1f} %",
        end=end,
        file=sys.stderr,
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
