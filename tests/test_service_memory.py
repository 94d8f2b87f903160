"""The memory requests of the service protocol (what the memory screen uses), over the real
socket with the real memory store and embedder; the LLM is a scripted endpoint, whose
requests show what the agent's next turn was given."""

from __future__ import annotations

from collections.abc import Callable

from assistant.clients.connection import ServiceClient
from assistant.config import LoadedConfig
from assistant.protocol.common import Failed, Notice
from assistant.protocol.conversation import ReplyEnd, Say
from assistant.protocol.memory import (
    CoreBlocks,
    CoreEdit,
    CoreQuery,
    MemoryChangedByUser,
    MemoryDelete,
    MemoryDetail,
    MemoryDone,
    MemoryEdit,
    MemoryOpen,
    MemoryPage,
    MemoryQuery,
    MemoryStats,
    MemoryUndo,
)
from memory.embedder import OnnxSentenceEmbedder
from tests.helpers.fake_openai import scripted_endpoint
from tests.helpers.memories import FACTS, prompt_of, retrieved, seed
from tests.helpers.service import InProcess, action, ask, until


async def turn(client: ServiceClient, text: str) -> None:
    await client.send(Say(text=text, ref=text))
    end = (await until(client, lambda u: isinstance(u, ReplyEnd)))[-1]
    assert isinstance(end, ReplyEnd) and end.error is None


async def test_list_search_and_open_memories(
    loaded_for: Callable[..., LoadedConfig],
    start_service: Callable[..., InProcess],
    embedder: OnnxSentenceEmbedder,
) -> None:
    with scripted_endpoint("stream", action("Noted.")) as (url, _):
        loaded = loaded_for(**{"llm.base_url": url})
        ids = seed(loaded, embedder)
        start_service(loaded)
        client = await ServiceClient.connect(loaded, "tui", start=False)
        await browse(client, ids)
        await client.close()


async def browse(client: ServiceClient, ids: dict[str, str]) -> None:
    stats = client.welcome.memory or (await until(client, lambda u: isinstance(u, MemoryStats)))[-1]
    assert stats == MemoryStats(count=5, ratings_pending=0)

    page = await ask(client, MemoryQuery(ref="a", page_size=2))
    assert isinstance(page, MemoryPage) and page.total == 5 and len(page.rows) == 2
    second = await ask(client, MemoryQuery(ref="b", page=3, page_size=2))
    assert isinstance(second, MemoryPage) and len(second.rows) == 1

    by_importance = await ask(client, MemoryQuery(ref="c", sort="importance"))
    assert isinstance(by_importance, MemoryPage)
    assert by_importance.rows[0].kind == "reflection"

    by_words = await ask(client, MemoryQuery(ref="d", query="dentist"))
    assert isinstance(by_words, MemoryPage)
    assert by_words.rows[0].text == FACTS[2]
    by_meaning = await ask(client, MemoryQuery(ref="e", query="which drink does Joana like"))
    assert isinstance(by_meaning, MemoryPage)
    assert by_meaning.rows[0].text == FACTS[3]
    assert by_meaning.rows[0].score is not None

    reflections = await ask(client, MemoryQuery(ref="f", kinds=["reflection"]))
    assert isinstance(reflections, MemoryPage) and reflections.total == 1
    insight = reflections.rows[0]
    detail = await ask(client, MemoryOpen(ref="g", id=insight.id))
    assert isinstance(detail, MemoryDetail)
    assert {c.row.id for c in detail.evidence.cites} == {ids[FACTS[0]], ids[FACTS[1]]}

    missing = await ask(client, MemoryOpen(ref="h", id="no-such-id"))
    assert isinstance(missing, Failed) and "no memory with id no-such-id" in missing.text


async def test_changes_reach_the_agents_next_turn_and_can_be_undone(
    loaded_for: Callable[..., LoadedConfig],
    start_service: Callable[..., InProcess],
    embedder: OnnxSentenceEmbedder,
) -> None:
    with scripted_endpoint("stream", action("Noted.")) as (url, endpoint):
        loaded = loaded_for(**{"llm.base_url": url})
        ids = seed(loaded, embedder)
        start_service(loaded)
        client = await ServiceClient.connect(loaded, "tui", start=False)
        other = await ServiceClient.connect(loaded, "chat", start=False)
        ana = ids[FACTS[0]]

        done = await ask(client, MemoryEdit(ref="1", id=ana, text="Ana lives in Lugano now."))
        assert isinstance(done, MemoryDone) and done.row.text == "Ana lives in Lugano now."
        told = await until(other, lambda u: isinstance(u, MemoryChangedByUser))
        assert isinstance(told[-1], MemoryChangedByUser) and told[-1].id == ana

        await turn(client, "Where does Ana live?")
        assert "Ana lives in Lugano now." in retrieved(endpoint)
        assert "Porto" not in retrieved(endpoint)
        assert "[the user changed a memory] edited the memory" in prompt_of(endpoint)

        deleted = await ask(client, MemoryDelete(ref="2", id=ana))
        assert isinstance(deleted, MemoryDone) and deleted.row.deleted
        again = await ask(client, MemoryDelete(ref="3", id=ana))
        assert isinstance(again, Failed) and again.text == "already deleted"
        trash = await ask(client, MemoryQuery(ref="4", deleted=True))
        assert isinstance(trash, MemoryPage) and [r.id for r in trash.rows] == [ana]
        await turn(client, "Where does Ana live?")
        assert "Ana lives" not in retrieved(endpoint)
        assert "[the user changed a memory] deleted the memory" in prompt_of(endpoint)

        undone = await ask(client, MemoryUndo(ref="5"))
        assert isinstance(undone, MemoryDone) and not undone.row.deleted
        await turn(client, "Where does Ana live?")
        # Shown by the first turn's block, which is still in the history: told, not retrieved.
        assert "[the user changed a memory] undid a change" in prompt_of(endpoint)
        assert "Ana lives in Lugano now." in prompt_of(endpoint)

        history = await ask(client, MemoryOpen(ref="6", id=ana))
        assert isinstance(history, MemoryDetail)
        assert [c.action for c in history.changes][:3] == ["restore", "delete", "edit"]
        assert history.changes[1].undone

        pinned = await ask(client, MemoryEdit(ref="7", id=ana, pinned=True, importance=9))
        assert isinstance(pinned, MemoryDone) and pinned.row.pinned
        assert pinned.row.importance == 9 and pinned.row.importance_state == "given"
        unchanged = await ask(client, MemoryEdit(ref="8", id=ana, pinned=True))
        assert isinstance(unchanged, Failed) and unchanged.text == "nothing changed"
        await client.send(MemoryEdit.model_construct(ref="9", id=ana, importance=11))
        refused = (await until(client, lambda u: isinstance(u, Notice)))[-1]
        assert isinstance(refused, Notice) and "importance" in refused.text

        core = await ask(client, CoreQuery(ref="10"))
        assert isinstance(core, CoreBlocks)
        assert [b.label for b in core.blocks] == ["persona", "human"]
        edited = await ask(client, CoreEdit(ref="11", label="human", value="Name: Rita."))
        assert isinstance(edited, CoreBlocks) and edited.blocks[1].value == "Name: Rita."
        unknown = await ask(client, CoreEdit(ref="12", label="pets", value="a cat"))
        assert isinstance(unknown, Failed) and "no core memory block 'pets'" in unknown.text
        await turn(client, "What is my name?")
        assert "Name: Rita." in prompt_of(endpoint)
        for each in (client, other):
            await each.close()
