"""The master agent's loop with a scripted LLM, on real stores (LanceDB, the real embedder)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from assistant.agent.agent import Agent
from assistant.agent.context import MESSAGE_OVERHEAD_TOKENS, ContextConfig, ContextWindow
from assistant.agent.events import HeartbeatTick, UserText, UserUtterance
from assistant.agent.instructions import instructions
from assistant.agent.tools import MEMORIES_HEAD, Stores, action_schema
from assistant.agent.turn import FALLBACK_MESSAGE, AgentConfig
from assistant.agent.wiring import open_agent
from assistant.llm.client import LLMContextOverflow, LLMReplyError, LLMUnavailable
from assistant.llm.priority import BackgroundLLM, ForegroundGate
from assistant.settings import AgentSettings, Settings
from tests.agent_helpers import ScriptedStream, action, say


def make_agent(
    llm: ScriptedStream,
    stores: Stores,
    window: int = 4096,
    reply_tokens: int = 256,
    sleeps: list[float] | None = None,
    **config: int,
) -> Agent:
    context = ContextWindow(
        instructions(), stores.core, ContextConfig(window_tokens=window, reply_tokens=reply_tokens)
    )
    waits = sleeps if sleeps is not None else []
    return Agent(llm, stores, context, AgentConfig(**config), sleep=waits.append)


def recalled(stores: Stores) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in stores.recall.recent(100)]


def test_a_reply_streams_and_everything_is_recorded(stores: Stores) -> None:
    llm = ScriptedStream(say('Hello "Sid", café \u2615 \U0001f600 ok'))
    agent = make_agent(llm, stores)
    pieces: list[str] = []
    turn = agent.respond(UserText("Hi, I'm Sid."), on_text=pieces.append)
    assert len(pieces) > 3 and "".join(pieces) == 'Hello "Sid", café \u2615 \U0001f600 ok'
    assert turn.reply == "".join(pieces) and turn.error is None and not turn.interrupted
    assert recalled(stores) == [("user", "Hi, I'm Sid."), ("assistant", turn.reply)]
    texts = {r.text for r in stores.stream.list_memories(page_size=10).items}
    assert texts == {"User: Hi, I'm Sid.", f"Brain OS: {turn.reply}"}
    # The prompt: stable prefix with core memory, then the user's message.
    prompt = llm.calls[0]
    assert prompt[0]["role"] == "system" and "## Core memory" in prompt[0]["content"]
    assert prompt[-1] == {"role": "user", "content": "Hi, I'm Sid."}


def test_small_talk_is_kept_in_recall_storage_but_not_in_the_memory_stream(
    stores: Stores,
) -> None:
    llm = ScriptedStream(say("You're welcome! Let me know if there's anything else."))
    turn = make_agent(llm, stores).respond(UserText("Thanks, that's all for now."))
    assert recalled(stores) == [
        ("user", "Thanks, that's all for now."),
        ("assistant", turn.reply),
    ]
    assert not stores.stream.list_memories(page_size=10).items


def test_tools_chain_and_a_core_memory_edit_is_noted_after_the_step(stores: Stores) -> None:
    llm = ScriptedStream(
        action("core_memory_append", True, label="human", content="Name: Sid."),
        say("Nice to meet you, Sid."),
        action("core_memory_replace", True, label="human", old_content="Sid", new_content="Ann"),
        say("Noted, Ann."),
    )
    agent = make_agent(llm, stores)
    first = agent.respond(UserText("I'm Sid."))
    assert [s.tool for s in first.steps] == ["core_memory_append", "send_message"]
    assert llm.calls[1][-2]["content"].startswith("[core_memory_append] human now holds")
    # The next step is told of the edit in a note; the prefix stays as it was sent.
    assert llm.calls[1][-1] == {
        "role": "system",
        "content": "[core memory] added to human: Name: Sid.",
    }
    agent.respond(UserText("Sorry, I meant Ann."))
    assert llm.calls[3][-1] == {
        "role": "system",
        "content": "[core memory] human now reads:\nName: Ann.",
    }
    assert all(call[0] == llm.calls[0][0] for call in llm.calls)
    assert "Name: " not in llm.calls[0][0]["content"]
    assert stores.core.blocks["human"].value == "Name: Ann."
    tool_lines = [text for role, text in recalled(stores) if role == "tool"]
    assert tool_lines[0].startswith('core_memory_append {"label": "human"')


def test_a_failing_tool_is_reported_to_the_model(stores: Stores) -> None:
    llm = ScriptedStream(
        action("core_memory_replace", True, label="human", old_content="Bob", new_content="x"),
        say("Sorry, nothing to change."),
    )
    turn = make_agent(llm, stores).respond(UserText("Rename Bob."))
    assert turn.steps[0].failed and "old_content not found" in turn.steps[0].result
    assert "[core_memory_replace] error: old_content not found" in llm.calls[1][-1]["content"]
    assert turn.reply == "Sorry, nothing to change."


def test_a_malformed_action_goes_back_to_the_model(stores: Stores) -> None:
    llm = ScriptedStream('{"tool": "send_mess', action("shout", message="hi"), say("Fixed."))
    turn = make_agent(llm, stores).respond(UserText("Hello"))
    assert turn.reply == "Fixed." and len(llm.calls) == 3
    assert "not valid JSON" in llm.calls[1][-1]["content"]
    assert "unknown tool 'shout'" in llm.calls[2][-1]["content"]


def test_endless_nonsense_ends_in_the_fallback_message(stores: Stores) -> None:
    llm = ScriptedStream("I am not JSON at all")
    pieces: list[str] = []
    turn = make_agent(llm, stores, max_errors=2).respond(UserText("Hello"), on_text=pieces.append)
    assert len(llm.calls) == 3 and turn.reply == FALLBACK_MESSAGE
    assert pieces == [FALLBACK_MESSAGE]
    assert recalled(stores)[-1] == ("assistant", FALLBACK_MESSAGE)


def test_a_message_delivered_whole_counts_even_if_the_json_breaks_after_it(
    stores: Stores,
) -> None:
    llm = ScriptedStream('{"tool": "send_message", "arguments": {"message": "All done."}, "requ')
    turn = make_agent(llm, stores).respond(UserText("Status?"))
    assert turn.reply == "All done." and len(llm.calls) == 1


def test_a_message_cut_at_the_token_cap_is_kept_as_said_not_asked_again(
    stores: Stores,
) -> None:
    cut = '{"message": "Brigida lives in Parma. Parma is a city in Italy, wi'
    llm = ScriptedStream(cut, say("Never asked for."))
    pieces: list[str] = []
    turn = make_agent(llm, stores).respond(UserText("Where?"), on_text=pieces.append)
    shown = "Brigida lives in Parma. Parma is a city in Italy, wi"
    assert turn.reply == shown and "".join(pieces) == shown and len(llm.calls) == 1
    assert recalled(stores)[-1] == ("assistant", shown)


def test_cancel_mid_stream_keeps_the_delivered_part(stores: Stores) -> None:
    llm = ScriptedStream(say("One two three four five six seven eight nine ten."), chunk=4)
    cancel = threading.Event()
    pieces: list[str] = []

    def listen(piece: str) -> None:
        pieces.append(piece)
        if len("".join(pieces)) >= 12:
            cancel.set()

    agent = make_agent(llm, stores)
    turn = agent.respond(UserText("Count."), on_text=listen, cancel=cancel)
    delivered = "".join(pieces)
    assert turn.interrupted and turn.reply == delivered + " [interrupted]"
    assert len(delivered) < len("One two three four five six seven eight nine ten.")
    assert recalled(stores)[-1] == ("assistant", delivered + " [interrupted]")
    kept = json.loads(agent.context.fifo[-1]["content"])
    assert kept == {"message": delivered + " [interrupted]"}


class SilentUntilReleased(ScriptedStream):
    """A model still reading its prompt: nothing streams until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__(say("Too late."))
        self.release = threading.Event()
        self.closed = threading.Event()

    def stream(self, messages, **options):  # type: ignore[no-untyped-def]
        try:
            self.release.wait(30)
            yield from super().stream(messages, **options)
        finally:
            self.closed.set()


def test_cancel_before_the_first_piece_returns_at_once_and_closes_the_stream(
    stores: Stores,
) -> None:
    llm = SilentUntilReleased()
    cancel = threading.Event()
    agent = make_agent(llm, stores)
    threading.Timer(0.2, cancel.set).start()
    turn = agent.respond(UserText("Tell me a long tale."), cancel=cancel)
    assert not llm.release.is_set(), "respond returned while the model was still silent"
    assert turn.interrupted and turn.reply == "" and turn.error is None
    assert recalled(stores) == [("user", "Tell me a long tale.")]
    llm.release.set()
    assert llm.closed.wait(10), "the stream is closed once it gives its first piece"


def test_an_endpoint_that_is_down_is_retried_with_back_off(stores: Stores) -> None:
    down = LLMUnavailable("cannot reach the LLM at http://127.0.0.1:9/v1")
    sleeps: list[float] = []
    llm = ScriptedStream(down, down, down)
    turn = make_agent(llm, stores, sleeps=sleeps).respond(UserText("Are you there?"))
    assert turn.error == str(down) and turn.reply == "" and sleeps == [1.0, 2.0]
    assert recalled(stores) == [("user", "Are you there?")]  # the message is kept
    llm = ScriptedStream(down, say("Back again."))
    assert make_agent(llm, stores).respond(UserText("And now?")).reply == "Back again."
    broken = ScriptedStream(LLMReplyError("the LLM sent a reply with no message in it"))
    assert make_agent(broken, stores).respond(UserText("?")).error is not None
    assert len(broken.calls) == 1  # not an outage: not retried


def test_context_overflow_flushes_and_retries_once(stores: Stores) -> None:
    overflow = LLMContextOverflow("the prompt does not fit the context window")
    llm = ScriptedStream(say("First."), overflow, say("Second."))
    agent = make_agent(llm, stores)
    agent.respond(UserText("One"))
    turn = agent.respond(UserText("Two"))
    assert turn.reply == "Second." and turn.flushed
    assert agent.context.summary == "A summary." and len(llm.summaries) == 1
    assert "user: One" in llm.summaries[0][-1]["content"]
    # Retried with the summary noted just before the event (the event stays last).
    assert llm.calls[2][-2]["content"] == "[summary of the earlier conversation]\nA summary."
    assert llm.calls[2][-1] == {"role": "user", "content": "Two"}
    twice = ScriptedStream(overflow)
    agent = make_agent(twice, stores)
    agent.respond(UserText("Three"))
    assert agent.respond(UserText("Four")).error == str(overflow) and len(twice.calls) == 4


def test_memory_pressure_warns_then_evicts_into_a_recursive_summary(stores: Stores) -> None:
    llm = ScriptedStream(say("Sure, noted: " + "details " * 20))
    agent = make_agent(llm, stores, window=1700, reply_tokens=100)
    warned_at = flushed_at = None
    for number in range(12):
        turn = agent.respond(UserText(f"Message {number}: " + "words " * 30))
        prompt = llm.calls[-1]
        if warned_at is None and any("[memory pressure]" in m["content"] for m in prompt):
            warned_at = number
        if turn.flushed and flushed_at is None:
            flushed_at = number
    assert warned_at is not None and flushed_at is not None and warned_at < flushed_at
    assert len(llm.summaries) >= 2  # recursive: the second summary reads the first
    assert "Summary so far:\nA summary." in llm.summaries[-1][-1]["content"]
    count = agent.context.count
    sent = [sum(count(m["content"]) + MESSAGE_OVERHEAD_TOKENS for m in call) for call in llm.calls]
    assert max(sent) <= agent.context.budget
    assert not any("Message 0:" in m["content"] for m in agent.context.fifo)
    assert sum(1 for role, _ in recalled(stores) if role == "user") == 12  # evicted, not lost


def test_events_other_than_speech_are_kept_in_recall_only(stores: Stores) -> None:
    llm = ScriptedStream(say("Heard you."), say("Nothing due."))
    agent = make_agent(llm, stores)
    agent.respond(UserUtterance("turn of the lights", confidence=0.41))
    assert "transcription may be wrong: 41%" in llm.calls[0][-1]["content"]
    agent.respond(HeartbeatTick())
    assert recalled(stores)[2][0] == "system" and "[heartbeat" in recalled(stores)[2][1]
    assert len(stores.stream) == 3  # the utterance and the two replies


def test_retrieved_memories_come_just_before_the_event(stores: Stores) -> None:
    stores.stream.add("User: My sister Brigida lives in Parma.", importance=7)
    llm = ScriptedStream(action("memory_search", True, query="sister"), say("In Parma."))
    make_agent(llm, stores).respond(UserText("Where does my sister live?"))
    for call in llm.calls:  # every step of the event: memories, then the event, then the steps
        memories = next(i for i, m in enumerate(call) if m["content"].startswith(MEMORIES_HEAD))
        assert call[memories]["role"] == "system"
        assert "Brigida lives in Parma" in call[memories]["content"]
        assert call[memories + 1] == {"role": "user", "content": "Where does my sister live?"}
    assert llm.calls[1][: len(llm.calls[0])] == llm.calls[0]  # the second step extends the first


def test_memories_already_in_view_are_not_retrieved_again(stores: Stores) -> None:
    llm = ScriptedStream(say("Noted."), say("In Parma."))
    agent = make_agent(llm, stores)
    agent.respond(UserText("My sister Brigida lives in Parma."))
    agent.respond(UserText("Where does Brigida live?"))
    assert not any(m["content"].startswith(MEMORIES_HEAD) for m in llm.calls[1])
    agent.context.evict()  # the first exchange leaves the window...
    agent.respond(UserText("Where does Brigida live, again?"))
    assert "Brigida lives in Parma" in llm.calls[2][-2]["content"]  # ...and comes back


def test_background_llm_work_waits_until_the_reply_is_done(stores: Stores) -> None:
    gate = ForegroundGate()
    order: list[str] = []

    class Client:  # stands in for LLMClient where the rater calls it
        def complete_json(self, messages: object, schema: object, **options: object) -> dict:
            order.append("rating")
            return {"importance": 3}

    started = threading.Event()

    def reply(messages: object) -> str:
        started.set()
        time.sleep(0.3)  # the rating is asked for meanwhile
        order.append("reply")
        return say("Done.")

    background = BackgroundLLM(Client(), gate)  # type: ignore[arg-type]
    rater = threading.Thread(target=lambda: started.wait(5) and background.complete_json([], {}))
    rater.start()
    context = ContextWindow(instructions(), stores.core)
    Agent(ScriptedStream(reply), stores, context, gate=gate).respond(UserText("Hi"))
    rater.join(5)
    assert order == ["reply", "rating"] and not gate.busy


def test_two_messages_in_one_turn_are_apart_and_loops_stop(stores: Stores) -> None:
    llm = ScriptedStream(say("One.", heartbeat=True), say("Two."))
    pieces: list[str] = []
    turn = make_agent(llm, stores).respond(UserText("Count"), on_text=pieces.append)
    assert "".join(pieces) == "One.\nTwo." and turn.reply == "One.\nTwo."
    # A model going round is told to answer and held to send_message for one more step...
    search = action("memory_search", True, query="keys")
    answering = ScriptedStream(search, search, say("In the hall."))
    turn = make_agent(answering, stores).respond(UserText("Look for my keys."))
    assert "[note] You already did that" in answering.calls[2][-1]["content"]
    assert [s.tool for s in turn.steps] == ["memory_search", "memory_search", "send_message"]
    assert turn.reply == "In the hall."
    assert tools_allowed(answering.schemas[2]) == ["send_message"]
    assert len(tools_allowed(answering.schemas[0])) > 1
    # ...and one that still goes round gets the fallback: the user is not left in silence.
    looping = ScriptedStream(search)
    turn = make_agent(looping, stores).respond(UserText("Look for my keys."))
    assert len(looping.calls) == 3
    assert turn.reply == FALLBACK_MESSAGE


def test_a_user_message_gets_an_answer_after_a_step_that_asked_for_none(stores: Stores) -> None:
    llm = ScriptedStream(
        action("core_memory_append", label="human", content="Sister Brigida lives in Parma."),
        say("Noted: Brigida lives in Parma."),
    )
    turn = make_agent(llm, stores).respond(UserText("My sister Brigida lives in Parma."))
    assert [s.tool for s in turn.steps] == ["core_memory_append", "send_message"]
    assert turn.reply == "Noted: Brigida lives in Parma."
    assert llm.calls[1][-1] == {
        "role": "system",
        "content": "[note] Now answer the user with send_message.",
    }
    quiet = ScriptedStream(action("core_memory_append", label="human", content="Likes tea."))
    tick = make_agent(quiet, stores).respond(HeartbeatTick())
    assert len(quiet.calls) == 1 and tick.reply == "", "no one asked: no answer is forced"


def test_the_schema_lets_no_step_follow_a_message() -> None:
    """A message is written in its short form, {"message": ...}, which has no
    request_heartbeat: speaking ends the steps."""
    shapes = action_schema()["anyOf"]
    message = [shape for shape in shapes if "tool" not in shape["properties"]]
    assert message == [
        {
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
            "additionalProperties": False,
        }
    ]
    tools = {
        shape["properties"]["tool"]["const"]: shape for shape in shapes if shape not in message
    }
    assert "send_message" not in tools
    assert tools["recall_search"]["properties"]["request_heartbeat"] == {"type": "boolean"}


def test_a_spoken_reply_cut_off_is_followed_by_a_note_of_what_was_heard(stores: Stores) -> None:
    llm = ScriptedStream(
        say("Lugano is sunny today. Tomorrow brings rain in the afternoon."),
        say("Okay."),
    )
    agent = make_agent(llm, stores)
    turn = agent.respond(UserUtterance("What's the weather in Lugano?", 0.9))
    before = list(agent.context.fifo)
    agent.heard_only("Lugano is sunny today. Tomorrow")

    note = (
        "[the user interrupted the spoken reply; they heard only: "
        "'Lugano is sunny today. Tomorrow']"
    )
    # The reply stays in the history as it was sent; the note follows it.
    assert agent.context.fifo == [*before, {"role": "system", "content": note}]
    kept = "Lugano is sunny today. Tomorrow [interrupted]"
    # The memory stream's record says what was heard; its change history keeps the whole reply.
    records = {r.text: r for r in stores.stream.list_memories(page_size=10).items}
    assert f"Brain OS: {kept}" in records and f"Brain OS: {turn.reply}" not in records
    change = stores.stream.changes(records[f"Brain OS: {kept}"].id)[0]
    assert change.before["text"] == f"Brain OS: {turn.reply}"
    # Recall storage keeps what was written and a note of what was heard.
    assert recalled(stores)[-2:] == [("assistant", turn.reply), ("system", note)]
    # The next prompt extends the last one with the note, then the new message.
    agent.respond(UserText("Stop, thanks."))
    assert llm.calls[1][: len(llm.calls[0])] == llm.calls[0]
    assert llm.calls[1][-2:] == [
        {"role": "system", "content": note},
        {"role": "user", "content": "Stop, thanks."},
    ]


def test_the_user_is_in_recall_before_the_model_is_asked_and_in_the_stream_after(
    stores: Stores,
) -> None:
    seen: dict[str, Any] = {}

    def reply(messages: Any) -> str:
        seen["recall"] = recalled(stores)
        seen["stream"] = [r.text for r in stores.stream.list_memories(page_size=10).items]
        return say("Noted, Rita.")

    agent = make_agent(ScriptedStream(reply), stores)
    agent.respond(UserText("I am Rita and I live in Parma."))
    # Asked with the words durable in recall; the stream record (embedding, near-copy check)
    # waited for the first token.
    assert seen == {"recall": [("user", "I am Rita and I live in Parma.")], "stream": []}
    records = {r.text: r.id for r in stores.stream.list_memories(page_size=10).items}
    user = records["User: I am Rita and I live in Parma."]
    assert "Brain OS: Noted, Rita." in records
    # The window knows the message shows its record: it is not retrieved for the next event.
    assert user in agent.context.in_view()


def test_a_turn_whose_model_fails_still_records_the_message_in_the_stream(
    stores: Stores,
) -> None:
    agent = make_agent(ScriptedStream(LLMReplyError("the server sent nonsense")), stores)
    turn = agent.respond(UserText("Remember the blue door."))
    assert turn.error is not None
    texts = {r.text for r in stores.stream.list_memories(page_size=10).items}
    assert "User: Remember the blue door." in texts


def test_a_reply_cut_before_any_of_it_was_heard(stores: Stores) -> None:
    agent = make_agent(ScriptedStream(say("A long answer.")), stores)
    agent.respond(UserUtterance("Tell me something.", 0.9))
    agent.heard_only("")
    assert agent.context.fifo[-1] == {
        "role": "system",
        "content": "[the user interrupted the spoken reply before hearing any of it]",
    }
    texts = {r.text for r in stores.stream.list_memories(page_size=10).items}
    assert "Brain OS: (interrupted before it was heard)" in texts


def tools_allowed(schema: dict[str, Any] | None) -> list[str]:
    assert schema is not None
    return [
        option["properties"]["tool"]["const"] if "tool" in option["properties"] else "send_message"
        for option in schema["anyOf"]
    ]


@pytest.mark.parametrize("design", ["json_action", "plain"])
def test_a_restart_resumes_the_conversation_without_the_failure_apology(
    stores: Stores, tmp_path: Path, design: str
) -> None:
    for role, text in [
        ("user", "Hi, I am Rita."),
        ("assistant", FALLBACK_MESSAGE),
        ("user", "Where does Aya live?"),
        ("assistant", "In Parma."),
    ]:
        stores.recall.append(role, text, conversation_id="main")
    # No saved window in the data folder: the window is rebuilt from recall.
    settings = Settings(data_dir=tmp_path / "data", agent=AgentSettings(reply_design=design))
    agent = open_agent(settings, ScriptedStream(say("Hello.")), stores)
    resumed = [str(m["content"]) for m in agent.context.fifo]
    assert resumed[0] == "Hi, I am Rita." and resumed[1] == "Where does Aya live?"
    # Each design's history keeps a message as that design writes one.
    if design == "plain":
        assert resumed[2] == "In Parma."
    else:
        assert json.loads(resumed[2]) == {"message": "In Parma."}
    assert not any(FALLBACK_MESSAGE in text for text in resumed)
