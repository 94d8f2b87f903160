"""The agent with the real local model (fast profile), real stores and the real embedder."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from assistant.agent.agent import Agent
from assistant.agent.checks.opening import INTERJECTIONS, willing_openings
from assistant.agent.context import ContextConfig, ContextWindow, is_summary_note
from assistant.agent.events import UserText
from assistant.agent.instructions import instructions
from assistant.agent.step_request import ADMITTING_GRAMMAR, RECALLING_GRAMMAR, opening_grammar
from assistant.agent.told import told_note
from assistant.agent.tone import Tone
from assistant.agent.tools import Search, Stores, by_name
from assistant.agent.turn import AgentConfig
from assistant.agent.wiring import open_stores
from assistant.llm.client import LLMClient
from assistant.llm.messages import Message
from memory.embedder import OnnxSentenceEmbedder
from tests.agent_helpers import say

pytestmark = pytest.mark.slow

LUNCHES = ["soup", "a sandwich", "rice", "noodles", "salad", "pizza", "tacos", "curry"]


class Recording:
    """The real client, keeping every prompt it was sent; while ``filler`` is set, replies
    come from the script instead (quick turns that only fill the context), and so do the
    summaries after the first (each real one reads up to 6,000 characters: ~30 s here)."""

    def __init__(self, client: LLMClient) -> None:
        self.client = client
        self.prompts: list[list[Message]] = []
        self.filler: str | None = None
        self.summaries = 0

    def stream(self, messages: Sequence[Message], **options: Any) -> Iterator[str]:
        self.prompts.append([dict(m) for m in messages])
        if self.filler is not None:
            return iter([self.filler])
        return self.client.stream(messages, **options)

    def complete(self, messages: Sequence[Message], **options: Any) -> str:
        self.summaries += 1
        if self.filler is not None and self.summaries > 1:
            return "Each day the user said what they had for lunch."
        return self.client.complete(messages, **options)


@pytest.fixture
def stores(tmp_path: Path, embedder: OnnxSentenceEmbedder) -> Iterator[Stores]:
    opened = open_stores(tmp_path / "data", embedder, rate=False, core_memory_chars=600)
    yield opened
    opened.stream.close()


def test_a_fact_from_turn_1_is_retrieved_into_the_prompt_at_turn_25(
    fast_llm: LLMClient, stores: Stores
) -> None:
    llm = Recording(fast_llm)
    context = ContextWindow(
        instructions(), stores.core, ContextConfig(window_tokens=2000, reply_tokens=160)
    )
    # Greedy: at the default temperature the first reply varied run to run, and so did what
    # the window held at turn 25.
    config = AgentConfig(max_steps=2, max_errors=1, temperature=0.0)
    agent = Agent(llm, stores, context, config)
    fact = "My sister Brigida lives in Parma and works as a marine biologist."
    turns = [agent.respond(UserText(fact))]
    # Turns 2-24 only fill the window: their replies are scripted (the model would take
    # minutes over them); the first summary of evicted messages is the real model's.
    llm.filler = say("Ok, noted.")
    for number in range(2, 25):
        lunch = LUNCHES[number % len(LUNCHES)]
        turns.append(agent.respond(UserText(f"Day {number}: I had {lunch} for lunch today.")))
    llm.filler = None
    # At least one flush, whose summary the real model wrote (the recursive summaries after it
    # are the agent tests' subject, with a scripted model).
    assert any(turn.flushed for turn in turns) and context.summary and llm.summaries >= 1
    asked = len(llm.prompts)
    agent.respond(UserText("Where does my sister live?"))
    prompt = llm.prompts[asked]
    assert {"role": "user", "content": fact} not in context.fifo  # evicted from the FIFO...
    # ...and in view again: retrieved for this message or an earlier one still in the window,
    # or (a memory in view is not retrieved twice) in the model's own reply to it, when that
    # repeated the fact (the stream merges the repeat into the fact's record) and was kept
    # while the fact's message was evicted. Not only in the summary.
    assert any("Brigida lives in Parma" in m["content"] and not is_summary_note(m) for m in prompt)
    assert prompt[-1] == {"role": "user", "content": "Where does my sister live?"}
    assert all(turn.error is None for turn in turns)
    assert stores.recall.count() >= 48  # every message kept in recall storage


def test_a_core_memory_replace_by_the_model_is_noted_in_the_next_prompt(
    fast_llm: LLMClient, stores: Stores
) -> None:
    stores.core.append("human", "Name: Bram")
    llm = Recording(fast_llm)
    context = ContextWindow(instructions(), stores.core)
    # Only core_memory_replace on offer: the grammar makes the model call it.
    tools = [by_name()["core_memory_replace"]]
    # Greedy, and one step: with no send_message on offer, a second step (the agent asks for
    # an answer after a tool call) could only be another replace, undoing the first.
    config = AgentConfig(max_steps=1, max_errors=2, temperature=0.0)
    agent = Agent(llm, stores, context, config, tools=tools)
    turn = agent.respond(
        UserText(
            "The human block says Name: Bram, but my name is Bramwell. Replace Bram with "
            "Bramwell in the human block."
        )
    )
    done = [s for s in turn.steps if s.tool == "core_memory_replace" and not s.failed]
    assert done, turn
    assert "Bramwell" in stores.core.blocks["human"].value, [
        (s.arguments, s.result) for s in turn.steps
    ]
    agent.respond(UserText("Thanks."))
    assert "Bramwell" not in llm.prompts[0][0]["content"]
    # The prefix stays as it was; a note after the step tells the edit.
    assert llm.prompts[-1][0] == llm.prompts[0][0]
    notes = [m["content"] for m in llm.prompts[-1] if m["content"].startswith("[core memory]")]
    assert notes and "Bramwell" in notes[-1]


def test_recall_search_pages(stores: Stores) -> None:
    for number in range(12):
        stores.recall.append("user", f"Reminder {number}: water the tomato plants.")
    stores.recall.append("user", "The car needs new tyres.")
    run = by_name()["recall_search"].run
    first = run(stores, Search(query="tomato plants", page=1))
    third = run(stores, Search(query="tomato plants", page=3))
    assert first.startswith("recall: showing 5 of ")
    total = int(first.split(" of ")[1].split(" ")[0])
    assert total >= 12 and f"(page 1/{-(-total // 5)})" in first
    assert third.startswith(f"recall: showing {min(5, total - 10)} of {total} (page 3/")
    assert "tomato" in first.splitlines()[1]


def test_the_willing_grammar_holds_the_real_model_to_a_whole_opening_word(
    fast_llm: LLMClient,
) -> None:
    openings = willing_openings(tone=Tone.TROUBLE)
    grammar = opening_grammar(*openings)
    asked: list[Message] = [{"role": "user", "content": "Someone stole my bike from the station."}]
    reply = "".join(fast_llm.stream(asked, grammar=grammar, max_tokens=24, temperature=0.3))
    opening = next((word for word in openings if reply.startswith(word)), None)
    assert opening is not None, reply
    rest = reply[len(opening) :]
    assert not rest or rest[0] in " \n,.!?;:'-", reply
    if opening in INTERJECTIONS:
        assert rest[:1] in (",", ".", "!") and rest[1:2] == " " and rest[2:3].isalpha(), (
            f"an interjection is said with its mark, and words after it: {reply}"
        )


def test_an_answer_held_to_say_what_was_told_says_it(fast_llm: LLMClient) -> None:
    said, question = "My wife Odette paints, and our son Bram is eleven.", "What's my son's name?"
    asked: list[Message] = [
        {"role": "system", "content": instructions(design="plain")},
        {"role": "user", "content": said},
        {"role": "assistant", "content": "Lovely, noted."},
        {"role": "system", "content": told_note(question, [said])},
        {"role": "user", "content": question},
    ]
    reply = "".join(
        fast_llm.stream(asked, grammar=RECALLING_GRAMMAR, max_tokens=32, temperature=0.0)
    )
    assert reply.startswith("You told me that ") and "Bram" in reply, reply


def test_an_admission_goes_on_to_say_what_it_does_not_know(fast_llm: LLMClient) -> None:
    asked: list[Message] = [{"role": "user", "content": "What is my aunt's favourite song?"}]
    reply = "".join(
        fast_llm.stream(asked, grammar=ADMITTING_GRAMMAR, max_tokens=24, temperature=0.3)
    )
    assert reply.startswith("I don't know") and len(reply.split()) > 3, reply
