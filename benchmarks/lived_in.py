"""A lived-in data folder for the benchmarks, built once per profile and cached.

A user's assistant is not the empty folder the benchmarks used to start from: it holds
thousands of memories, and its conversation has run long enough for the window to have been
compacted. Figures measured on an empty folder did not hold in a used one (issue "Fast where
the user is"). This builds one:

1. every turn of the LoCoMo dev conversations (``--locomo``, about 1,450 turns over many
   months), written through the app's own write path (``open_stores``: embedded, importance
   rated, event times resolved), each with its session's date;
2. a conversation typed to ``brain serve`` with the app's defaults (graph, reflection, day plan,
   heartbeat look), a message ``WARM_UP_PAUSE_S`` after each reply, long enough that the
   window was compacted at least once: its replies, the
   memories they wrote, the graph the service learnt, the core memory, the saved window.

    python -m benchmarks.lived_in --profile fast [--locomo ../shared/eval/locomo/locomo-dev.json]

prints the cached folder (building it the first time, some minutes). The warm-up (48
messages) fills the window past the compaction share before its end; the build then waits,
the service idle, for the background summary to be swapped in and saved, as it is while the
user is away. A benchmark run takes a copy (``copy_into``), so every run starts from the same
folder. The cache is keyed by the profile, the LoCoMo file's contents and ``VERSION`` (raise
it when what is built changes).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

from benchmarks.conversation import Conversation, log, run_conversation, shown_to_agent
from benchmarks.conversation_rules import Case

VERSION = 7
DEFAULT_LOCOMO = (
    Path(__file__).resolve().parents[2] / "shared" / "eval" / "locomo" / ("locomo-dev.json")
)
# The conversation typed to the service, about a person of its own (no benchmark's words).
WARM_UP = (
    "Hi, I'm Corentin. I bind books in a small workshop in Rennes.",
    "My partner Yusra is a hydrologist; she studies the rivers of Brittany.",
    "We have an old spaniel called Bramble.",
    "What's a good stretch for a stiff back after a day at the bench?",
    "I'm trying to drink less coffee this month.",
    "Yusra's birthday is on the twelfth of March.",
    "Tell me a short fact about paper making.",
    "The workshop roof leaked again last night.",
    "What do you think I should do about the leak?",
    "My sister Maëlle is visiting in two weeks.",
    "Suggest something to cook for her; she doesn't eat mushrooms.",
    "I finished restoring a nineteenth-century atlas today.",
    "How should I store leather so it doesn't dry out?",
    "Bramble chewed one of my bone folders.",
    "I play the accordion on Sunday mornings.",
    "What's a simple way to learn a new tune by ear?",
    "Yusra got a grant for her river survey!",
    "I slept badly; the people upstairs had a party.",
    "Give me a two-line poem about glue.",
    "I want to walk more, maybe eight thousand steps a day.",
    "What was the name of my dog again?",
    "The atlas client paid on time, which was a relief.",
    "Any tips for keeping a workshop warm in winter without spending much?",
    "I'm thinking of teaching an evening class in bookbinding.",
    "What should I put in a beginner's kit?",
    "Maëlle changed her plans; she's coming next weekend instead.",
    "Thanks, that helps a lot.",
    "I'm off to bed now, good night.",
    "Morning! Coffee number one, despite my plan.",
    "Remind me what my partner studies?",
    "I glued the spine of a cookbook for a neighbour this morning.",
    "Which glue is best for paper that must stay flexible?",
    "Bramble has a vet appointment on Thursday.",
    "I'm worried he's getting slow on the stairs.",
    "How many steps did I say I wanted to walk?",
    "Cheers, talk later.",
    "Back again. The vet said Bramble just needs more exercise.",
    "Can you suggest a short evening walk routine for an older dog?",
    "I ordered new goatskin for the class kits.",
    "Yusra is presenting her river survey in Nantes next month.",
    "What's a good way to help someone rehearse a talk?",
    "I repaired a family bible for an old man from Vannes; he cried when he saw it.",
    "How do you clean foxing marks off old paper?",
    "The roofer is coming on Monday at last.",
    "Remind me, what is Yusra's birthday?",
    "I tried a new tune on the accordion, a gavotte from the Pays Vannetais.",
    "Tell me something about the history of the accordion in Brittany.",
    "Right, back to the bench. Thanks!",
)
TURN_TIMEOUT_S = 180.0
# Between a reply and the next message: the user reads it. Typed back to back, the background
# server (paused while a reply is written) wrote no summary in 48 turns.
WARM_UP_PAUSE_S = 6.0
# How long the idle service may take to write and swap in the summary after the last turn.
COMPACTION_WAIT_S = 300.0
POLL_S = 2.0


def cache_root() -> Path:
    from assistant.config import load_config

    return load_config().settings.cache_dir / "benchmarks" / "lived-in"


def key(profile: str, locomo: Path) -> str:
    digest = hashlib.sha256(locomo.read_bytes()).hexdigest()[:12]
    return f"{profile}-v{VERSION}-{digest}"


def lived_in(profile: str, locomo: Path = DEFAULT_LOCOMO, root: Path | None = None) -> Path:
    """The cached lived-in folder for ``profile`` (its ``data`` inside), built if missing."""
    folder = (root or cache_root()) / key(profile, locomo)
    if (folder / "data").is_dir():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(
        prefix=".building-", dir=folder.parent, ignore_cleanup_errors=True
    ) as building:
        build(profile, locomo, Path(building))
        shutil.rmtree(folder, ignore_errors=True)
        Path(building).rename(folder)  # whole or not at all
        Path(building).mkdir()  # for the context manager's clean-up
    return folder


def copy_into(lived: Path, data_dir: Path) -> None:
    """A copy of the lived-in folder's data as ``data_dir`` (which must not exist yet)."""
    shutil.copytree(lived / "data", data_dir)


def build(profile: str, locomo: Path, root: Path) -> None:
    """The memories, then the conversation, in ``root``/data."""
    from assistant.agent.wiring import open_stores
    from assistant.config import load_config
    from assistant.parts import configured_embedder
    from benchmarks.locomo import load_conversations
    from memory.stream import NewMemory

    data_dir = root / "data"
    config_file = root / "config.toml"
    config_file.write_text("", encoding="utf-8")
    flags = {"profile": profile, "data_dir": str(data_dir)}
    settings = load_config(flags=flags, environ={}, config_file=config_file).settings
    stores = open_stores(data_dir, configured_embedder(), settings.agent.core_memory_chars)
    written = 0
    for conversation in load_conversations(locomo):
        turns = [turn for turn in conversation.turns if turn.memory_text().strip()]
        stores.stream.add_many(
            [NewMemory(turn.memory_text(), created_at=turn.when) for turn in turns],
            merge_duplicates=False,
        )
        written += len(turns)
        log(f"lived-in: {written} memories written ({conversation.sample_id})")
    stores.stream.close()
    warm_up = Conversation("lived-in", "Corentin", tuple(Case.of({"say": say}) for say in WARM_UP))
    results, _ = asyncio.run(
        run_conversation(profile, None, warm_up, root, TURN_TIMEOUT_S, before_stop=until_compacted)
    )
    failed = [result for result in results if result.error is not None]
    summary = saved_summary(data_dir)
    log(
        f"lived-in: {len(results)} turns typed, {len(failed)} failed; window compacted: "
        f"{bool(summary)}; shown: {len(shown_to_agent(data_dir)[1])} characters"
    )
    if not summary:
        raise RuntimeError("the warm-up conversation never compacted the window")


def saved_summary(data_dir: Path) -> str:
    """The summary in the window the service saved (empty before any compaction)."""
    try:
        state = json.loads((data_dir / "context.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return str(state.get("summary") or "")


async def until_compacted(data_dir: Path) -> None:
    """Until the saved window holds a summary, or COMPACTION_WAIT_S has passed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + COMPACTION_WAIT_S
    while not saved_summary(data_dir) and loop.time() < deadline:
        await asyncio.sleep(POLL_S)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", choices=["fast", "quality"], default="fast")
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    args = parser.parse_args(argv)
    print(lived_in(args.profile, args.locomo))
    return 0


if __name__ == "__main__":
    sys.exit(main())
