"""The live Obsidian vault (docs/VAULT.md): notes rendered and read back however Obsidian
rewrites their YAML; the sync's decisions on real LanceDB with the real embedder (both sides
changed, start-up catch-up, a note that cannot be read); and a real service keeping a folder
in step with its memory both ways, watched with watchfiles, its changes told to the clients."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from assistant.agent.tools import Stores
from assistant.agent.wiring import open_stores
from assistant.clients.connection import ServiceClient
from assistant.config import LoadedConfig
from assistant.protocol import Update
from assistant.protocol.common import Notice
from assistant.protocol.memory import (
    MemoryChangedByUser,
    MemoryDetail,
    MemoryDone,
    MemoryEdit,
    MemoryOpen,
    MemoryPage,
    MemoryQuery,
    MemoryUndo,
)
from assistant.service.vault_relay import DeskEdits
from assistant.service.vault_watch import Timing
from memory.embedder import OnnxSentenceEmbedder
from memory.records import MemoryRecord
from memory.stream import Filters
from memory.vault.decide import file_action
from memory.vault.files import VaultFiles
from memory.vault.notes import render_note
from memory.vault.parse import NoteError, parse_note
from memory.vault.state import VaultState
from memory.vault.sync import LIVE_KEYS, VaultSync
from tests.helpers.fake_openai import scripted_endpoint
from tests.helpers.memories import FACTS, INSIGHT, seed
from tests.helpers.service import InProcess, action, ask, until
from tests.memory_helpers import START, Clock, store_fact

T = TypeVar("T")
# Short waits, so a test does not sit through the ones made for someone typing in Obsidian.
TIMING = Timing(memory_s=0.1, note_s=0.2, inbox_s=0.4)
WAIT_S = 15.0


# Reading a vault


def note_paths(vault: Path) -> dict[str, Path]:
    """The memory notes of the vault that can be read, by memory id."""
    found = {}
    for path in vault.rglob("*.md"):
        if path.relative_to(vault).parts[0] in ("Entities", "Inbox"):
            continue
        try:
            view = parse_note(path.read_bytes())
        except NoteError:
            continue
        assert view.id is not None
        found[view.id] = path
    return found


def front(path: Path) -> dict[str, Any]:
    return parse_note(path.read_bytes()).front


def text_of(path: Path) -> str:
    return parse_note(path.read_bytes()).text


def rewrite(path: Path, **changes: Any) -> None:
    """Edit a note as a user would: the text, or a property (as Obsidian writes YAML)."""
    view = parse_note(path.read_bytes())
    values = {**view.front, **{k: v for k, v in changes.items() if k != "text"}}
    body = changes.get("text", view.text)
    links = "\n".join(view.links)
    head = yaml.safe_dump(values, sort_keys=False, allow_unicode=True)
    path.write_text(f"---\n{head}---\n\n{body}\n\n{links}\n", encoding="utf-8")


def at(path: Path, moved: timedelta) -> None:
    """Give the file the time now moved by ``moved``."""
    moment = time.time() + moved.total_seconds()
    os.utime(path, (moment, moment))


def eventually(check: Callable[[], T], timeout: float = WAIT_S) -> T:
    """The first truthy value of ``check()``, within ``timeout`` (polled: a file has no
    event to wait on here)."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"not within {timeout} s"
        time.sleep(0.05)
    return value


async def soon(check: Callable[[], T], timeout: float = WAIT_S) -> T:
    return await asyncio.to_thread(eventually, check, timeout)


# Notes, rendered and read back


def record_of(**changes: Any) -> MemoryRecord:
    record = MemoryRecord(
        id="a" * 32,
        text="Shopping:\n- milk\n- eggs\n\n## Evidence\nis a heading of mine, then prose",
        kind="reflection",
        created_at=START,
        last_accessed_at=START,
        importance=4,
        sources=("user",),
        evidence=("b" * 32,),
    )
    return record.with_changes(**changes)


def test_a_note_reads_back_as_written_however_obsidian_rewrites_its_yaml(tmp_path: Path) -> None:
    record = record_of()
    names = {"b" * 32: "2026-11-21 cited bbbbbbbb"}
    rendered = render_note(record, names, LIVE_KEYS, ["Aya", "Parma"])
    view = parse_note(rendered.encode())
    assert view.id == record.id and view.text == record.text
    assert (view.importance, view.pinned) == (4, False)
    assert view.links == (
        "## Evidence",
        "- [[2026-11-21 cited bbbbbbbb]]",
        "## Entities",
        "- [[Aya]]",
        "- [[Parma]]",
    )
    # Obsidian's properties pane writes block lists and bare timestamps: the same note.
    path = tmp_path / "note.md"
    path.write_text(rendered, encoding="utf-8")
    rewrite(path)
    assert path.read_text(encoding="utf-8") != rendered
    assert parse_note(path.read_bytes()) == view
    assert file_action(record, parse_note(path.read_bytes()), rendered) == "keep"
    assert file_action(record.with_changes(deleted=True), view, rendered) == "remove"
    pinned = render_note(record.with_changes(pinned=True), names, LIVE_KEYS, ["Aya", "Parma"])
    assert file_action(record, parse_note(pinned.encode()), rendered) == "write"

    cases = {
        b"\x00\x01\x02 a picture": "binary",
        "---\nid: x\n---\n\ncaf\xe9".encode("latin-1"): "not UTF-8",
        b"---\nid: [unclosed\n---\n\ntext": "broken front matter",
        b"---\n- a list\n---\n\ntext": "broken front matter",
        b"---\nid: x\n\nno end to the front matter": "no closing",
        b"---\nimportance: 11\n---\n\ntext": "importance must be",
        b"---\npinned: maybe\n---\n\ntext": "pinned must be",
    }
    for data, reason in cases.items():
        with pytest.raises(NoteError, match=reason):
            parse_note(data)


# The sync on real stores


class Vault:
    """A vault kept by VaultSync on real stores, with what it told and reported."""

    def __init__(self, stores: Stores, folder: Path, data: Path, clock: Clock) -> None:
        self.stores = stores
        self.folder = folder
        self.data = data
        self.clock = clock
        self.told: list[tuple[str, str]] = []
        self.reports: list[str] = []
        self.sync = self.restart()

    def restart(self) -> VaultSync:
        """A sync as a new start of the service makes it (the state read from its file)."""
        self.sync = VaultSync(
            VaultFiles(self.folder, self.clock),
            self.stores.stream,
            self.stores.graph,
            VaultState(self.data / "vault.json", self.folder),
            DeskEdits(self.stores, self.told.append),
            self.reports.append,
            self.clock,
        )
        self.sync.catch_up()
        return self.sync

    def saved(self, path: Path) -> None:
        """The watcher saw ``path`` change."""
        name = self.sync.files.name(path)
        assert name is not None
        self.sync.files_changed([name])


@pytest.fixture
def vault(tmp_path: Path, embedder: OnnxSentenceEmbedder) -> Iterator[Vault]:
    clock = Clock()
    data = tmp_path / "data"
    stores = open_stores(data, embedder, core_memory_chars=400, rate=False, clock=clock)
    for text in FACTS:
        stores.stream.add(text, importance=4)
    yield Vault(stores, tmp_path / "vault", data, clock)
    stores.stream.close()


def test_when_both_sides_changed_the_later_wins_and_the_other_is_in_the_history(
    vault: Vault,
) -> None:
    stream = vault.stores.stream
    notes = note_paths(vault.folder)
    ana, pedro = (
        next(r.id for r in stream.list_memories().items if r.text == t) for t in FACTS[:2]
    )
    vault.clock.advance(minutes=10)
    stream.edit(ana, text="Ana lives in Breda.")
    stream.edit(pedro, text="Pedro plays the double bass.")

    # Ana's note was saved after the app's edit: the note wins.
    rewrite(notes[ana], text="Ana lives in Lugano.")
    at(notes[ana], timedelta(minutes=5))
    vault.saved(notes[ana])
    assert stream.get(ana).text == "Ana lives in Lugano."  # type: ignore[union-attr]
    texts = [c.after.get("text") for c in stream.changes(ana)]
    assert texts == ["Ana lives in Lugano.", "Ana lives in Breda.", FACTS[0]]

    # Pedro's was saved before it: the app's text stays, the note's is in the history, and
    # the importance only the note changed is taken.
    rewrite(notes[pedro], text="Pedro plays the viola.", importance=8)
    at(notes[pedro], timedelta(minutes=-5))
    vault.saved(notes[pedro])
    after = stream.get(pedro)
    assert after is not None
    assert (after.text, after.importance) == ("Pedro plays the double bass.", 8)
    changes = [(c.after.get("text"), c.after.get("importance")) for c in stream.changes(pedro)]
    assert changes == [
        ("Pedro plays the double bass.", None),
        ("Pedro plays the viola.", 8),
        ("Pedro plays the double bass.", None),
        (FACTS[1], None),
    ]
    assert text_of(notes[pedro]) == "Pedro plays the double bass."
    assert front(notes[pedro])["importance"] == 8
    assert vault.reports == []


def test_a_note_moved_or_half_typed_waits_for_the_watcher_to_settle(vault: Vault) -> None:
    stream = vault.stores.stream
    notes = note_paths(vault.folder)
    ids = {r.text: r.id for r in stream.list_memories().items}
    ana, pedro = ids[FACTS[0]], ids[FACTS[1]]
    moved = vault.folder / "People" / "Ana.md"
    moved.parent.mkdir()
    notes[ana].rename(moved)
    rewrite(notes[pedro], text="Pedro plays the vi")
    # The memory changes before the watcher has told of either (a turn judged them).
    stream.edit(ana, importance=8)
    stream.adjust_utility([ana, pedro], helped=True)
    vault.sync.records_changed([ana, pedro])
    assert not stream.get(ana).deleted, "a note moved away is no deletion"  # type: ignore[union-attr]
    assert stream.get(pedro).text == FACTS[1], "nor is a half typed one read"  # type: ignore[union-attr]

    # Settled, the watcher tells of the note typed in full, and of the move: its old name
    # first, alone (its two events may come apart).
    rewrite(notes[pedro], text="Pedro plays the viola.")
    vault.saved(notes[ana])
    vault.saved(moved)
    vault.saved(notes[pedro])
    assert note_paths(vault.folder)[ana] == moved and front(moved)["importance"] == 8
    assert [c.action for c in stream.changes(ana)] == ["edit", "add"]
    assert stream.get(pedro).text == "Pedro plays the viola."  # type: ignore[union-attr]
    assert vault.reports == []


def test_start_up_catches_up_with_what_changed_while_it_was_stopped(vault: Vault) -> None:
    stream, graph = vault.stores.stream, vault.stores.graph
    notes = note_paths(vault.folder)
    ids = {r.text: r.id for r in stream.list_memories().items}
    ana, pedro, dentist, joana = (ids[t] for t in FACTS)
    insight = stream.add(INSIGHT, kind="reflection", evidence=(ana, pedro), importance=6)
    store_fact(graph, "Ana", "lives in", "Porto", (ana,))
    vault.restart()
    notes = note_paths(vault.folder)
    assert f"[[{notes[ana].stem}]]" in notes[insight.id].read_text(encoding="utf-8")
    assert "- [[Ana]]" in notes[ana].read_text(encoding="utf-8")
    assert (vault.folder / "Entities" / "Porto.md").is_file()

    # While the service was stopped: notes edited, deleted, renamed, made in the inbox, one
    # broken; and a memory changed (by an import, say).
    rewrite(notes[ana], text="Ana lives in Lugano.", pinned=True)
    notes[pedro].unlink()
    renamed = notes[joana].with_name("Joana and tea.md")
    notes[joana].rename(renamed)
    (vault.folder / "Inbox" / "cat.md").write_text("Joana's cat is called Momo.\n", "utf-8")
    broken = b"---\nid: [oops\n---\n\nThe dentist appointment is on Monday."
    mended = broken.replace(b"[oops", f'"{dentist}"'.encode())
    unreadable = notes[dentist]
    unreadable.write_bytes(broken)
    stream.edit(insight.id, importance=9)
    told = len(vault.told)

    vault.restart()
    after = stream.get(ana)
    assert after is not None and (after.text, after.pinned) == ("Ana lives in Lugano.", True)
    assert [c.action for c in stream.changes(ana)] == ["edit", "add"]
    assert stream.get(pedro).deleted  # type: ignore[union-attr]
    stream.undo(next(c for c in stream.changes(pedro) if c.action == "delete").id)
    assert not stream.get(joana).deleted  # type: ignore[union-attr]
    cat = stream.list_memories(Filters(sources=("vault",))).items[0]
    assert (cat.text, cat.sources) == ("Joana's cat is called Momo.", ("vault",))
    assert not list((vault.folder / "Inbox").iterdir())
    # A broken note is told once, left as it is, and its memory as it was.
    assert len(vault.reports) == 1 and unreadable.stem in vault.reports[0]
    assert unreadable.read_bytes() == broken
    assert stream.get(dentist).text == FACTS[2]  # type: ignore[union-attr]
    assert len(vault.told) == told + 3  # the edit, the delete, the new memory

    # Brought in step again (a watcher's events, the memory's feed): nothing more happens.
    vault.sync.records_changed([r.id for r in stream.list_memories(page_size=50).items])
    vault.sync.files_changed(n for n in vault.sync.files.notes())
    vault.saved(unreadable)
    notes = note_paths(vault.folder)
    assert set(notes) == {ana, pedro, joana, insight.id, cat.id} and notes[joana] == renamed
    assert front(notes[insight.id])["importance"] == 9
    assert len(vault.told) == told + 3 and len(vault.reports) == 1
    # Mended, the note is read.
    unreadable.write_bytes(mended)
    vault.saved(unreadable)
    assert stream.get(dentist).text == "The dentist appointment is on Monday."  # type: ignore[union-attr]


# Through a real service


@dataclass
class Served:
    """A service keeping ``folder`` in step with a seeded memory, and a client of it."""

    folder: Path
    client: ServiceClient
    ids: dict[str, str]
    notes: dict[str, Path]


@pytest.fixture
async def served(
    loaded_for: Callable[..., LoadedConfig],
    start_service: Callable[..., InProcess],
    embedder: OnnxSentenceEmbedder,
    tmp_path: Path,
) -> AsyncIterator[Served]:
    folder = tmp_path / "vault"
    with scripted_endpoint("stream", action("Noted.")) as (url, _):
        loaded = loaded_for(**{"llm.base_url": url, "vault.path": str(folder)})
        ids = seed(loaded, embedder)
        start_service(loaded, vault_timing=TIMING)
        client = await ServiceClient.connect(loaded, "tui", start=False)
        notes = await soon(lambda: len(found := note_paths(folder)) == len(ids) and found)
        yield Served(folder, client, ids, notes)
        await client.close()


def changed(record_id: str) -> Callable[[Update], bool]:
    return lambda u: isinstance(u, MemoryChangedByUser) and u.id == record_id


async def test_the_app_and_the_vault_follow_each_other(served: Served) -> None:
    client, ids, notes, folder = served.client, served.ids, served.notes, served.folder
    ana, pedro, dentist, joana = (ids[t] for t in FACTS)

    # A memory edited in the app rewrites its note.
    done = await ask(client, MemoryEdit(ref="1", id=pedro, importance=9))
    assert isinstance(done, MemoryDone)
    await soon(lambda: front(notes[pedro])["importance"] == 9)

    # A note edited on disk changes the memory, told to every client as a screen edit,
    # with its history; undone in the app, the note follows.
    rewrite(notes[ana], text="Ana lives in Lugano now.")
    told = (await until(client, changed(ana)))[-1]
    assert isinstance(told, MemoryChangedByUser) and "Lugano" in told.text
    detail = await ask(client, MemoryOpen(ref="2", id=ana))
    assert isinstance(detail, MemoryDetail)
    assert [(c.action, c.after.get("text")) for c in detail.changes] == [
        ("edit", "Ana lives in Lugano now."),
        ("add", FACTS[0]),
    ]
    undone = await ask(client, MemoryUndo(ref="3"))
    assert isinstance(undone, MemoryDone) and undone.row.text == FACTS[0]
    await soon(lambda: text_of(notes[ana]) == FACTS[0])

    # A note deleted on disk deletes the memory; undone, its note is back.
    notes[dentist].unlink()
    await until(client, changed(dentist))
    trash = await ask(client, MemoryQuery(ref="4", deleted=True))
    assert isinstance(trash, MemoryPage) and [r.id for r in trash.rows] == [dentist]
    undone = await ask(client, MemoryUndo(ref="5"))
    assert isinstance(undone, MemoryDone) and not undone.row.deleted
    await soon(notes[dentist].is_file)

    # A new note in the inbox becomes a memory, and gives way to the memory's own note.
    inbox = folder / "Inbox" / "Untitled.md"
    inbox.write_text("Joana's cat is called Momo.\n", encoding="utf-8")
    added = (
        await until(client, lambda u: isinstance(u, MemoryChangedByUser) and "Momo" in u.text)
    )[-1]
    assert isinstance(added, MemoryChangedByUser) and "Momo" in added.text
    page = await ask(client, MemoryQuery(ref="6", sources=["vault"]))
    assert isinstance(page, MemoryPage) and [r.text for r in page.rows] == [
        "Joana's cat is called Momo."
    ]
    await soon(lambda: not inbox.exists() and added.id in note_paths(folder))

    # A note that cannot be read is told once, in one line, and nothing is lost.
    notes[pedro].write_bytes(b"\xff\xfe\x00 not a note")
    notice = (await until(client, lambda u: isinstance(u, Notice) and "vault" in u.text))[-1]
    assert isinstance(notice, Notice) and notes[pedro].stem in notice.text
    assert "\n" not in notice.text
    notes[pedro].write_bytes(b"\xff\xfe\x00 not a note")  # saved again, the same
    rewrite(notes[joana], importance=7)
    seen = await until(client, changed(joana))
    assert not [u for u in seen if isinstance(u, Notice)], "told once"
    detail = await ask(client, MemoryOpen(ref="7", id=pedro))
    assert isinstance(detail, MemoryDetail) and detail.evidence.row.importance == 9

    # The service's own writes were never taken for the user's: each memory's history
    # holds only the changes made above.
    histories = {}
    for number, record_id in enumerate(ids.values()):
        opened = await ask(client, MemoryOpen(ref=f"h{number}", id=record_id))
        assert isinstance(opened, MemoryDetail)
        histories[record_id] = [c.action for c in opened.changes]
    assert histories == {
        ana: ["edit", "edit", "add"],
        pedro: ["edit", "add"],
        dentist: ["restore", "delete", "add"],
        joana: ["edit", "add"],
        ids[INSIGHT]: ["add"],
    }


async def test_two_writers_at_once_lose_no_update(served: Served) -> None:
    client, ids, notes = served.client, served.ids, served.notes
    facts = [ids[t] for t in FACTS]
    wanted = {
        record_id: (f"{text[:-1]}, as of round {n}.", n + 5)
        for n, (record_id, text) in enumerate(zip(facts, FACTS, strict=True))
    }

    def edit_notes() -> None:
        for record_id, (text, _) in wanted.items():
            rewrite(notes[record_id], text=text)

    # The app sets importances while the user rewrites the same notes' texts.
    for record_id, (_, importance) in wanted.items():
        await client.send(MemoryEdit(ref=record_id, id=record_id, importance=importance))
    await asyncio.to_thread(edit_notes)

    def in_step() -> bool:
        for record_id, (text, importance) in wanted.items():
            view = parse_note(notes[record_id].read_bytes())
            if (view.text, view.importance) != (text, importance):
                return False
        return True

    await soon(in_step)
    for record_id, (text, importance) in wanted.items():
        opened = await ask(client, MemoryOpen(ref=f"o-{record_id}", id=record_id))
        assert isinstance(opened, MemoryDetail)
        row = opened.evidence.row
        assert (row.text, row.importance) == (text, importance)
        edits = [set(c.after) & {"text", "importance"} for c in opened.changes[:-1]]
        assert sorted(map(sorted, edits)) == [["importance"], ["text"]], "one edit each"
