"""Which memories a turn shows: its best ones that are near it in meaning, none for small talk
that nothing stored is about. Real stores and embedder; a scripted model."""

from __future__ import annotations

from assistant.agent.agent import Agent
from assistant.agent.context import ContextConfig, ContextWindow
from assistant.agent.events import UserText
from assistant.agent.instructions import instructions
from assistant.agent.tools import MEMORIES_HEAD, Stores
from assistant.agent.turn import AgentConfig
from memory.stream import MemoryStream
from tests.agent_helpers import ScriptedStream, agent_on, say

STORED = [
    "User: My sister Brigida lives in Parma.",
    "User: Slept five hours on Tuesday night after I walked the dog.",
    "User: Bought groceries for the week for 79 dollars.",
]


def shown_with(stores: Stores, message: str) -> str:
    for text in STORED:
        stores.stream.add(text, importance=6)
    model = ScriptedStream(say("Ok."))
    agent_on(model, stores).respond(UserText(message))
    blocks = [m["content"] for m in model.calls[-1] if m["content"].startswith(MEMORIES_HEAD)]
    return "\n".join(blocks)


def test_a_question_about_a_memory_shows_it(stores: Stores) -> None:
    shown = shown_with(stores, "Where does my sister Brigida live?")
    assert "Brigida lives in Parma" in shown
    assert "walked the dog" not in shown, "unrelated: left out, though stored as recently"


def test_small_talk_that_no_memory_is_about_shows_none(stores: Stores) -> None:
    assert shown_with(stores, "Suggest a name for a grey cat.") == ""


def test_the_similarity_is_the_embeddings_cosine_unnormalised(stream: MemoryStream) -> None:
    for text in STORED:
        stream.add(text, importance=6)
    found = stream.retrieve("Suggest a name for a grey cat.", k=3, touch=False)
    assert max(m.relevance for m in found) == 1.0, "min-max: the best is 1 however far"
    assert all(m.similarity < AgentConfig().least_similarity for m in found), found


def test_past_the_first_two_a_memory_must_be_nearer(stores: Stores) -> None:
    sister = [
        "User: My sister Brigida lives in Parma.",
        "User: Brigida teaches piano to children.",
        "User: Brigida has a grey cat called Pepe.",
        "User: Brigida is learning to sail on Lake Garda.",
    ]
    for text in sister:
        stores.stream.add(text, importance=6)
    found = stores.stream.retrieve("Tell me about my sister Brigida.", k=4, touch=False)
    near = sorted(m.similarity for m in found)
    floor = near[0] - 0.01
    for more, count in ((floor, 4), (near[-1] + 0.01, 2)):
        model = ScriptedStream(say("Ok."))
        config = AgentConfig(retrieved_memories=4, least_similarity=floor, more_similarity=more)
        context = ContextWindow(instructions(), stores.core, ContextConfig(window_tokens=8192))
        Agent(model, stores, context, config).respond(UserText("Tell me about my sister Brigida."))
        shown = [m["content"] for m in model.calls[-1] if m["content"].startswith(MEMORIES_HEAD)]
        assert sum("Brigida" in line for line in "\n".join(shown).splitlines()) == count
