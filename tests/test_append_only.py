"""The prompt is append-only between compactions: every prompt the agent sends is the one before
it with new messages added at the end, every earlier message as it was, so the llama.cpp
server's prompt cache covers all of it. Over a conversation with tools, an edit of core memory
from the screen, a barge-in and a malformed reply; with a scripted model, then with the real
local one. Real stores (LanceDB, the real embedder)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from assistant.agent.agent import Agent
from assistant.agent.context import ContextConfig, ContextWindow
from assistant.agent.events import Event, HeartbeatTick, MemoryChanged, UserText, UserUtterance
from assistant.agent.instructions import instructions
from assistant.agent.tools import MEMORIES_HEAD, Stores
from assistant.agent.turn import AgentConfig, Turn
from assistant.llm.client import LLMClient, LLMContextOverflow
from assistant.llm.messages import Message
from assistant.llm.protocols import AgentLLM
from assistant.service.desks.memory import MemoryDesk
from assistant.settings import Settings
from tests.agent_helpers import ScriptedStream, action, say

RELEVANT = MEMORIES_HEAD


class Recorder:
    """Any agent LLM, keeping every message list it is sent (a copy, as sent)."""

    def __init__(self, llm: AgentLLM) -> None:
        self.llm = llm
        self.prompts: list[list[Message]] = []

    def stream(self, messages: Sequence[Message], **options: Any) -> Iterator[str]:
        self.prompts.append([dict(m) for m in messages])
        return self.llm.stream(messages, **options)

    def complete(self, messages: Sequence[Message], **options: Any) -> str:
        return self.llm.complete(messages, **options)


@dataclass
class Conversation:
    """An agent with its LLM recorded, and which prompts each event led to."""

    agent: Agent
    llm: Recorder
    # Per event: its turn and the indices of the prompts it sent.
    events: list[tuple[Turn, range]] = field(default_factory=list)

    def respond(self, event: Event) -> Turn:
        first = len(self.llm.prompts)
        turn = self.agent.respond(event)
        self.events.append((turn, range(first, len(self.llm.prompts))))
        return turn

    def edit_core_on_screen(self, label: str, value: str) -> None:
        """As the service does for a user's edit: the block is set, and the agent is told."""
        text = MemoryDesk(self.agent.stores).set_core(label, value)
        self.agent.note(MemoryChanged(text))


def open_conversation(
    llm: AgentLLM, stores: Stores, window: int = 8192, **config: Any
) -> Conversation:
    recorded = Recorder(llm)
    context = ContextWindow(
        instructions(), stores.core, ContextConfig(window_tokens=window, reply_tokens=256)
    )
    return Conversation(Agent(recorded, stores, context, AgentConfig(**config)), recorded)


def assert_extends(earlier: list[Message], later: list[Message], where: str) -> None:
    # The same prompt again is a step asked once more (a refusal, an old reply copied).
    assert len(later) > len(earlier) or later == earlier, f"{where}: the prompt did not grow"
    for index, message in enumerate(earlier):
        assert later[index] == message, (
            f"{where}: message {index} changed\nwas: {message!r}\nnow: {later[index]!r}"
        )


def assert_append_only(conversation: Conversation) -> int:
    """Each prompt extends the one before it, within an event's steps and from one event to
    the next, except across a compaction; returns how many pairs were compared."""
    prompts, compared = conversation.llm.prompts, 0
    for number, (turn, indices) in enumerate(conversation.events):
        if turn.flushed:  # where in the event the flush came is not recorded: skip it all
            continue
        for index in indices:
            if index > 0:
                where = f"event {number}, prompt {index}"
                assert_extends(prompts[index - 1], prompts[index], where)
                compared += 1
    return compared


def relevant_lines(prompt: Sequence[Message]) -> list[str]:
    """Every memory line of every retrieved block in the prompt."""
    return [
        line
        for message in prompt
        if message["content"].startswith(RELEVANT)
        for line in message["content"].splitlines()[1:]
    ]


# Compact, as a model may write it: as_json would put spaces after the separators.
COMPACT_GREETING = (
    '{"tool":"send_message","arguments":{"message":"Nice to meet you, Sid."},'
    '"request_heartbeat":false}'
)
WEATHER = "Sunny and warm in Lugano today, with a light breeze in the afternoon."


def test_a_conversation_only_ever_appends_to_the_prompt(stores: Stores) -> None:
    # More than one event's worth (5 a time): the second event shows the rest.
    for text in [
        "User: My brother Timon plays the cello.",
        "User: I am allergic to walnuts.",
        "User: My barber appointment is on Friday.",
        "User: I drive a blue Fiat.",
        "User: My best friend is called Joana.",
        "User: I work as a welder at the city shipyard.",
        "User: I go running on Sunday mornings.",
        "User: My cat is named Pimenta.",
    ]:
        stores.stream.add(text, importance=6)
    model = ScriptedStream(
        # 1: a core-memory edit, chained to an answer the model writes compactly.
        action("core_memory_append", True, label="human", content="Name: Sid. Lives in Lugano."),
        COMPACT_GREETING,
        # 2
        say("Noted: Brigida, a marine biologist in Parma."),
        # 3: spoken, and cut off
        say(WEATHER),
        # 4: a search, then the answer
        action("memory_search", True, query="sister work"),
        say("Brigida is a marine biologist in Parma."),
        # 5: a heartbeat that ends in a tool call, silently
        action("archival_insert", content="Sid prefers tea to coffee."),
        # 6
        say("You prefer tea to coffee."),
        # 7: a malformed reply, corrected
        '{"tool": "send_mess',
        say("Your name is Sid."),
        # 8: a search with no answer: the agent asks for one
        action("recall_search", query="live", page=1),
        say("In Lugano."),
        # 9
        say("You're welcome, Sid!"),
    )
    # Every memory shown, however far from the message: which are shown is not tested here.
    chat = open_conversation(model, stores, least_similarity=-1.0, more_similarity=-1.0)
    chat.respond(UserText("Hi, I'm Sid. I live in Lugano."))
    chat.respond(UserText("My sister Brigida works as a marine biologist in Parma."))
    chat.respond(UserUtterance("What's the weather like today?", 0.9))
    chat.agent.heard_only("Sunny and warm in")
    chat.edit_core_on_screen("human", "Name: Sid. Lives in Lugano. Prefers tea to coffee.")
    chat.respond(UserText("Where does my sister work?"))
    chat.respond(HeartbeatTick())
    chat.respond(UserText("Do I like coffee?"))
    chat.respond(UserUtterance("what is my name again", 0.5))
    chat.respond(UserText("And where do I live?"))
    last = chat.respond(UserText("Thanks, that's all."))

    prompts = chat.llm.prompts
    assert len(prompts) == 13 and last.reply == "You're welcome, Sid!"
    assert [len(indices) for _, indices in chat.events] == [2, 1, 1, 2, 1, 1, 2, 2, 1]
    assert not any(turn.flushed for turn, _ in chat.events)
    assert assert_append_only(chat) == 12
    final = prompts[-1]
    # The prefix never changed; the core-memory edits are notes in the history.
    assert all(prompt[0] == prompts[0][0] for prompt in prompts)
    assert "Prefers tea" not in final[0]["content"]
    notes = [m["content"] for m in final if m["content"].startswith("[core memory]")]
    assert notes == [
        "[core memory] added to human: Name: Sid. Lives in Lugano.",
        "[core memory] human now reads:\nName: Sid. Lives in Lugano. Prefers tea to coffee.",
    ]
    # The model's own bytes are in the history, not a re-serialisation.
    assert {"role": "assistant", "content": COMPACT_GREETING} in final
    # The cut-off reply is there as it was sent, and a note of what was heard after it.
    reply = final.index({"role": "assistant", "content": say(WEATHER)})
    assert final[reply + 1] == {
        "role": "system",
        "content": "[the user interrupted the spoken reply; they heard only: 'Sunny and warm in']",
    }
    # The retrieved memories stay in the history, and none is shown twice.
    lines = relevant_lines(final)
    assert len(lines) == len(set(lines)) == 8
    assert sum(m["content"].startswith(RELEVANT) for m in final) == 2


def test_retrieved_memories_stay_and_are_not_shown_again_while_in_view(stores: Stores) -> None:
    brigida = stores.stream.add("User: My sister Brigida lives in Parma.", importance=7)
    replies = ("In Parma.", "Yes, she still does.", "She lives in Parma.")
    chat = open_conversation(ScriptedStream(*map(say, replies)), stores)
    chat.respond(UserText("Where does my sister live?"))
    first = chat.llm.prompts[0]
    assert first[-2]["content"].startswith(RELEVANT) and "Brigida" in first[-2]["content"]
    assert first[-1] == {"role": "user", "content": "Where does my sister live?"}

    chat.respond(UserText("Does my sister Brigida still live in Parma?"))
    second = chat.llm.prompts[1]
    assert_extends(first, second, "the next event")  # the block is still where it was
    assert sum("Brigida lives in Parma" in line for line in relevant_lines(second)) == 1
    assert brigida.id in chat.agent.context.in_view()

    # Evicting the block takes its memories out of view: the next event may show them again.
    evicted = chat.agent.context.evict()
    assert evicted[0] == first[-2]
    assert brigida.id not in chat.agent.context.in_view()
    chat.respond(UserText("Remind me where Brigida lives."))
    assert "Brigida lives in Parma" in chat.llm.prompts[2][-2]["content"]


def test_core_memory_edits_are_noted_and_restated_with_a_flush_s_summary(stores: Stores) -> None:
    overflow = LLMContextOverflow("the prompt does not fit the context window")
    model = ScriptedStream(
        say("Hello."), say("Noted."), overflow, say("Still here."), say("Good night.")
    )
    chat = open_conversation(model, stores, retrieved_memories=0)
    chat.respond(UserText("Hi"))
    chat.edit_core_on_screen("human", "Name: Rita.")
    chat.respond(UserText("I put my name in on screen."))
    before, after = chat.llm.prompts[0], chat.llm.prompts[1]
    assert_extends(before, after, "after an edit on screen")
    assert after[0] == before[0] and "Rita" not in after[0]["content"]
    assert after[-3]["content"].startswith("[the user changed a memory] set the core memory")
    assert after[-2] == {"role": "system", "content": "[core memory] added to human: Name: Rita."}

    flushed = chat.respond(UserText("Tell me more."))  # overflows: evicts, then retries
    assert flushed.flushed and flushed.reply == "Still here."
    rewritten = chat.llm.prompts[3]
    assert rewritten[0] == before[0], "the prefix stays as it was sent"
    # The summary's note restates the edit (its own note may have been evicted), before the
    # event being answered.
    note = rewritten[-2]["content"]
    assert note.startswith("[summary of the earlier conversation]")
    assert note.endswith("[core memory] human now reads:\nName: Rita.")
    assert rewritten[-1] == {"role": "user", "content": "Tell me more."}

    chat.respond(UserText("Good night."))  # no edit since the flush: no note
    assert_extends(rewritten, chat.llm.prompts[4], "after the flush")
    added = chat.llm.prompts[4][len(rewritten) :]
    assert not any(m["content"].startswith("[core memory]") for m in added)


def test_the_model_s_own_text_is_kept_as_written(stores: Stores) -> None:
    spaced = (
        '{ "tool" : "send_message",\n  "arguments": {"message": "Olá, Sid!"},\n'
        '  "request_heartbeat": false }'
    )
    chat = open_conversation(ScriptedStream(spaced), stores)
    chat.respond(UserText("Hello"))
    assert chat.agent.context.fifo[-1] == {"role": "assistant", "content": spaced}


# With the real model


@pytest.mark.slow
def test_a_conversation_with_the_real_model_only_appends(
    fast_llm: LLMClient, fast_settings: Settings, stores: Stores
) -> None:
    stores.stream.add("User: My brother Timon plays the cello.", importance=6)
    # The client is wrapped, so it is driven through the JSON action, as the local server is.
    window = fast_settings.llm.context_window
    chat = open_conversation(fast_llm, stores, window, max_steps=3, max_errors=1, temperature=0.0)
    chat.respond(UserText("Hi, I'm Sid. Please remember that my name is Sid."))
    chat.respond(UserText("My sister Brigida works as a marine biologist in Parma."))
    spoken = chat.respond(UserUtterance("Tell me about the weather in spring.", 0.9))
    chat.agent.heard_only(" ".join(spoken.reply.split()[:3]))
    chat.edit_core_on_screen("human", "Name: Sid. Prefers tea to coffee.")
    chat.respond(UserText("Where does my sister work?"))
    chat.respond(UserText("What does my brother play?"))
    chat.respond(HeartbeatTick())
    chat.respond(UserText("Do I like coffee or tea?"))
    chat.respond(UserText("Thanks, that's all."))

    turns = [turn for turn, _ in chat.events]
    assert all(turn.error is None for turn in turns), [turn.error for turn in turns]
    assert assert_append_only(chat) >= 7
    final = chat.llm.prompts[-1]
    notes = [m["content"] for m in final if m["content"].startswith("[core memory]")]
    assert notes and "Prefers tea to coffee." in notes[-1]
    assert any(m["content"].startswith("[the user interrupted the spoken reply") for m in final)
