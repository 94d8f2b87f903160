"""Native tool calling: the agent offers its tools as ``tools`` where the endpoint supports them,
and reads tool calls and plain content into the same actions as the JSON path; first with a
scripted LLM, then with the real client against a scripted chat-completions SSE server. Real
stores (LanceDB, the real embedder)."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import pytest

from assistant.agent.actions import ActionError, parse_call
from assistant.agent.agent import Agent
from assistant.agent.context import ContextConfig, ContextWindow
from assistant.agent.events import UserText
from assistant.agent.instructions import instructions
from assistant.agent.streaming import ReplyStream
from assistant.agent.tools import TOOLS, Stores, by_name, native_tools
from assistant.agent.turn import FALLBACK_MESSAGE, AgentConfig
from assistant.llm.client import Endpoint, LLMClient, LLMContextOverflow, LLMUnavailable
from assistant.llm.messages import TextDelta, ToolCallDelta
from assistant.llm.protocols import AgentLLM
from tests.agent_helpers import ScriptedTools, action, call, say
from tests.helpers.fake_openai import Script, scripted_endpoint

TOOL_NAMES = [tool.name for tool in TOOLS]


def make_agent(
    llm: AgentLLM, stores: Stores, sleeps: list[float] | None = None, **config: int
) -> Agent:
    context = ContextWindow(instructions(), stores.core, ContextConfig(window_tokens=4096))
    waits = sleeps if sleeps is not None else []
    return Agent(llm, stores, context, AgentConfig(**config), sleep=waits.append)


def recalled(stores: Stores) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in stores.recall.recent(100)]


def fifo_actions(agent: Agent) -> list[dict[str, Any]]:
    """The history's actions, a message's short form written out as a send_message."""
    actions = [json.loads(m["content"]) for m in agent.context.fifo if m["role"] == "assistant"]
    return [
        {"tool": "send_message", "arguments": a, "request_heartbeat": False}
        if "tool" not in a
        else a
        for a in actions
    ]


# The tools as offered


def test_every_tool_is_offered_with_its_arguments_and_request_heartbeat() -> None:
    specs = native_tools()
    assert [spec["function"]["name"] for spec in specs] == TOOL_NAMES
    for spec, tool in zip(specs, TOOLS, strict=True):
        assert spec["type"] == "function" and spec["function"]["description"] == tool.description
        parameters = spec["function"]["parameters"]
        assert list(parameters["properties"]) == [*tool.arguments.model_fields, "request_heartbeat"]
        assert parameters["properties"]["request_heartbeat"]["type"] == "boolean"
        assert parameters["required"] == list(parameters["properties"])
        assert parameters["additionalProperties"] is False
    search = specs[TOOL_NAMES.index("recall_search")]["function"]["parameters"]["properties"]
    assert search["page"]["minimum"] == 1 and search["query"]["description"]


def test_a_call_is_read_into_the_same_action_and_errors_as_the_json_path() -> None:
    tools = by_name()
    action = parse_call(
        "recall_search", '{"query": "keys", "page": 2, "request_heartbeat": true}', tools
    )
    assert (action.tool, action.arguments.model_dump(), action.request_heartbeat) == (
        "recall_search",
        {"query": "keys", "page": 2},
        True,
    )
    assert not parse_call("memory_search", '{"query": "x"}', tools).request_heartbeat
    problems = {
        ("shout", "{}"): "unknown tool 'shout'",
        ("memory_search", '{"query": "x"'): "arguments of memory_search are not valid JSON",
        ("memory_search", "[1]"): "must be a JSON object",
        ("recall_search", '{"query": "x", "page": "two"}'): "wrong arguments for recall_search",
        ("send_message", '{"text": "hi"}'): "wrong arguments for send_message",
        ("send_message", '{"message": "hi", "request_heartbeat": "yes"}'): "true or false",
    }
    for (name, arguments), expected in problems.items():
        with pytest.raises(ActionError, match=expected):
            parse_call(name, arguments, tools)


def test_the_reply_reader_keeps_the_first_call_and_separates_text_sources(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reader = ReplyStream(native=True)
    shown = [
        reader.feed(TextDelta("  Let me look.")),
        reader.feed(ToolCallDelta(0, "a", "send_")),  # a name that comes in two pieces
        reader.feed(ToolCallDelta(0, None, "message", '{"message": "Fo')),
        reader.feed(ToolCallDelta(0, None, None, 'und it."}')),
        reader.feed(ToolCallDelta(1, "b", "memory_search", '{"query": "x"}')),
    ]
    assert shown == ["Let me look.", "", "\nFo", "und it.", ""]
    with caplog.at_level(logging.WARNING):
        said, action = reader.finish(by_name())
    assert said == "Let me look." and not isinstance(action, ActionError)
    assert action.arguments.model_dump() == {"message": "Found it."}
    assert "acting on send_message only, not on memory_search" in caplog.text


# Control flow, with a scripted native LLM


def test_plain_content_is_the_reply_and_is_kept_as_a_send_message(stores: Stores) -> None:
    llm = ScriptedTools("Hello Sid, nice to meet you.")
    pieces: list[str] = []
    agent = make_agent(llm, stores)
    turn = agent.respond(UserText("Hi, I'm Sid."), on_text=pieces.append)
    assert len(pieces) > 2 and "".join(pieces) == "Hello Sid, nice to meet you."
    assert turn.reply == "Hello Sid, nice to meet you." and turn.errors == []
    assert [s.tool for s in turn.steps] == ["send_message"]
    assert fifo_actions(agent) == [
        json.loads(action("send_message", message="Hello Sid, nice to meet you."))
    ]
    assert recalled(stores)[-1] == ("assistant", turn.reply)
    assert [spec["function"]["name"] for spec in llm.offered[0]] == TOOL_NAMES
    assert llm.schemas == []  # never asked for a JSON action


def test_a_send_message_call_streams_while_its_arguments_arrive(stores: Stores) -> None:
    message = 'Hello "Sid", café \u2615 \U0001f600 ok'
    llm = ScriptedTools(call("send_message", message=message), chunk=3)
    pieces: list[str] = []
    turn = make_agent(llm, stores).respond(UserText("Hi"), on_text=pieces.append)
    assert len(pieces) > 5 and "".join(pieces) == message == turn.reply


def test_a_json_action_written_as_content_is_accepted(stores: Stores) -> None:
    llm = ScriptedTools(
        "\n"
        + json.dumps(
            {"tool": "memory_search", "arguments": {"query": "keys"}, "request_heartbeat": True}
        ),
        say("They are on the hook."),
    )
    pieces: list[str] = []
    turn = make_agent(llm, stores).respond(UserText("Where are my keys?"), on_text=pieces.append)
    assert [s.tool for s in turn.steps] == ["memory_search", "send_message"]
    assert "".join(pieces) == "They are on the hook." == turn.reply  # no JSON shown


def test_text_ahead_of_a_tool_call_is_said_then_the_call_runs(stores: Stores) -> None:
    llm = ScriptedTools(
        [TextDelta("Let me check."), *call("memory_search", True, query="keys")],
        call("send_message", message="On the hook."),
    )
    pieces: list[str] = []
    agent = make_agent(llm, stores)
    turn = agent.respond(UserText("Where are my keys?"), on_text=pieces.append)
    assert [s.tool for s in turn.steps] == ["send_message", "memory_search", "send_message"]
    assert "".join(pieces) == "Let me check.\nOn the hook." == turn.reply
    assert [a["tool"] for a in fifo_actions(agent)] == [s.tool for s in turn.steps]


def test_only_the_first_tool_call_of_a_reply_is_acted_on(stores: Stores) -> None:
    llm = ScriptedTools(
        [
            *call("core_memory_append", True, label="human", content="Likes tea."),
            *call("core_memory_append", True, index=1, label="human", content="Likes coffee."),
        ],
        call("send_message", message="Noted."),
    )
    turn = make_agent(llm, stores).respond(UserText("I like tea."))
    assert [s.tool for s in turn.steps] == ["core_memory_append", "send_message"]
    assert stores.core.blocks["human"].value == "Likes tea."


def test_broken_calls_go_back_to_the_model_then_a_fix_works(stores: Stores) -> None:
    llm = ScriptedTools(
        call("send_message", raw='{"message": "'),
        call("shout", message="hi"),
        call("recall_search", True, query="x", page="two"),
        call("send_message", message="Fixed."),
    )
    turn = make_agent(llm, stores, max_errors=3).respond(UserText("Hello"))
    assert turn.reply == "Fixed." and len(llm.calls) == 4
    assert "arguments of send_message are not valid JSON" in llm.calls[1][-1]["content"]
    assert "unknown tool 'shout'" in llm.calls[2][-1]["content"]
    assert "wrong arguments for recall_search" in llm.calls[3][-1]["content"]
    assert llm.calls[1][-1]["content"].endswith("Reply again with one valid tool call.")


def test_a_message_delivered_whole_counts_even_if_its_arguments_break(stores: Stores) -> None:
    llm = ScriptedTools(call("send_message", raw='{"message": "All done.", "request_hear'))
    turn = make_agent(llm, stores).respond(UserText("Status?"))
    assert turn.reply == "All done." and len(llm.calls) == 1


def test_endless_empty_replies_end_in_the_fallback_message(stores: Stores) -> None:
    llm = ScriptedTools([])
    pieces: list[str] = []
    turn = make_agent(llm, stores, max_errors=2).respond(UserText("Hello"), on_text=pieces.append)
    assert len(llm.calls) == 3 and turn.reply == FALLBACK_MESSAGE and pieces == [FALLBACK_MESSAGE]
    assert "the reply was empty" in llm.calls[1][-1]["content"]


def test_a_repeated_call_gets_one_step_offered_send_message_only(stores: Stores) -> None:
    search = call("memory_search", True, query="keys")
    llm = ScriptedTools(search, search, call("send_message", message="In the hall."))
    turn = make_agent(llm, stores).respond(UserText("Where are my keys?"))
    assert turn.reply == "In the hall."
    assert [t["function"]["name"] for t in llm.offered[2]] == ["send_message"]
    assert len(llm.offered[0]) > 1
    looping = ScriptedTools(search)
    turn = make_agent(looping, stores).respond(UserText("Where are my keys?"))
    assert len(looping.calls) == 3 and turn.reply == FALLBACK_MESSAGE


def test_cancel_mid_call_keeps_the_delivered_part(stores: Stores) -> None:
    llm = ScriptedTools(call("send_message", message="One two three four five six seven."), chunk=4)
    cancel = threading.Event()
    pieces: list[str] = []

    def listen(piece: str) -> None:
        pieces.append(piece)
        if len("".join(pieces)) >= 8:
            cancel.set()

    agent = make_agent(llm, stores)
    turn = agent.respond(UserText("Count."), on_text=listen, cancel=cancel)
    delivered = "".join(pieces)
    assert turn.interrupted and turn.reply == delivered + " [interrupted]"
    assert fifo_actions(agent)[-1]["arguments"]["message"] == delivered + " [interrupted]"


def test_outages_are_retried_and_an_overflow_flushes(stores: Stores) -> None:
    down = LLMUnavailable("cannot reach the LLM at http://127.0.0.1:9/v1")
    sleeps: list[float] = []
    llm = ScriptedTools(down, "Back again.")
    assert make_agent(llm, stores, sleeps=sleeps).respond(UserText("Hi?")).reply == "Back again."
    assert sleeps == [1.0]
    overflow = LLMContextOverflow("the prompt does not fit the context window")
    llm = ScriptedTools("First.", overflow, "Second.")
    agent = make_agent(llm, stores)
    agent.respond(UserText("One"))
    turn = agent.respond(UserText("Two"))
    assert turn.reply == "Second." and turn.flushed and len(llm.summaries) == 1


def test_the_mode_may_change_between_turns_and_the_history_stays_text(stores: Stores) -> None:
    llm = ScriptedTools(
        call("core_memory_append", True, label="human", content="Name: Sid."),
        "Hi Sid.",
        say("Still here."),  # now asked for a JSON action
    )
    agent = make_agent(llm, stores)
    agent.respond(UserText("I'm Sid."))
    llm.tool_calling = "json_action"
    turn = agent.respond(UserText("Still there?"))
    assert turn.reply == "Still here." and len(llm.offered) == 2
    assert llm.schemas == [agent.requests.schema]
    history = llm.calls[2]
    assert json.loads(history[-5]["content"])["tool"] == "core_memory_append"
    assert history[-4]["content"].startswith("[core_memory_append] human now holds")
    assert history[-3]["content"] == "[core memory] added to human: Name: Sid."
    assert json.loads(history[-2]["content"]) == json.loads(say("Hi Sid."))


# The real client against a scripted chat-completions server


def content(text: str, size: int = 5) -> list[dict[str, object]]:
    return [{"role": "assistant", "content": ""}] + [
        {"content": text[start : start + size]} for start in range(0, len(text), size)
    ]


def tool_call(
    name: str, heartbeat: bool = False, *, raw: str | None = None, size: int = 5, **arguments: Any
) -> list[dict[str, object]]:
    """A streamed tool call: its id and name first, then its arguments in small fragments."""
    text = raw if raw is not None else json.dumps({**arguments, "request_heartbeat": heartbeat})
    head = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": name, "arguments": ""},
    }
    fragments = [
        {"tool_calls": [{"index": 0, "function": {"arguments": text[start : start + size]}}]}
        for start in range(0, len(text), size)
    ]
    return [{"role": "assistant", "content": None, "tool_calls": [head]}, *fragments]


def client(base_url: str, **options: Any) -> LLMClient:
    return LLMClient(Endpoint(base_url, "scripted"), timeout_s=10, **options)


def test_tool_calling_is_resolved_from_the_endpoint() -> None:
    assert client("http://127.0.0.1:9/v1").tool_calling == "native"
    local = LLMClient(Endpoint("http://127.0.0.1:9/v1", "m", is_local=True))
    assert local.tool_calling == "json_action"
    assert client("http://127.0.0.1:9/v1", tool_calling="json_action").tool_calling == "json_action"


def run_agent(
    stores: Stores, script: list[Script], text: str, **options: Any
) -> tuple[Agent, Any, list[str], list[dict[str, Any]]]:
    pieces: list[str] = []
    with scripted_endpoint("script", script=script) as (base_url, endpoint):
        llm = client(base_url, **options)
        agent = make_agent(llm, stores)
        turn = agent.respond(UserText(text), on_text=pieces.append)
        llm.close()
    return agent, turn, pieces, endpoint.requests  # type: ignore[return-value]


def test_a_streamed_send_message_call_reaches_the_listener_piece_by_piece(stores: Stores) -> None:
    message = "Hello Sid, good to meet you."
    agent, turn, pieces, requests = run_agent(
        stores, [tool_call("send_message", message=message)], "Hi"
    )
    assert len(pieces) > 3 and "".join(pieces) == message == turn.reply
    request = requests[0]
    assert "response_format" not in request and request["tool_choice"] == "auto"
    offered = {
        spec["function"]["name"]: spec["function"]["parameters"] for spec in request["tools"]
    }
    assert list(offered) == TOOL_NAMES
    assert all("request_heartbeat" in p["properties"] for p in offered.values())
    assert request["messages"][-1] == {"role": "user", "content": "Hi"}
    assert recalled(stores) == [("user", "Hi"), ("assistant", message)]
    assert fifo_actions(agent) == [json.loads(action("send_message", message=message))]


def test_a_core_memory_call_with_a_heartbeat_chains_into_a_message(stores: Stores) -> None:
    script = [
        tool_call("core_memory_append", True, label="human", content="Name: Sid."),
        tool_call("send_message", message="Nice to meet you, Sid."),
    ]
    _, turn, _, requests = run_agent(stores, script, "I'm Sid.")
    assert [s.tool for s in turn.steps] == ["core_memory_append", "send_message"]
    assert stores.core.blocks["human"].value == "Name: Sid."
    assert turn.reply == "Nice to meet you, Sid." and len(requests) == 2
    first, second = requests[0]["messages"], requests[1]["messages"]
    assert second[: len(first)] == first  # the prefix too: the edit is told in a note
    assert json.loads(second[-3]["content"])["tool"] == "core_memory_append"
    assert second[-2]["role"] == "system" and second[-2]["content"].startswith(
        "[core_memory_append]"
    )
    assert second[-1] == {"role": "system", "content": "[core memory] added to human: Name: Sid."}


def test_plain_content_from_the_endpoint_is_the_reply(stores: Stores) -> None:
    _, turn, pieces, requests = run_agent(
        stores,
        [content("It is sunny and warm today, with a light breeze off the sea.")],
        "Weather?",
    )
    assert (
        len(pieces) > 3
        and turn.reply == "It is sunny and warm today, with a light breeze off the sea."
        and len(requests) == 1
    )


def test_broken_arguments_and_an_unknown_tool_are_corrected(stores: Stores) -> None:
    script = [
        tool_call("send_message", raw='{"message": "'),
        tool_call("shout", message="HI"),
        tool_call("send_message", message="Hi there."),
    ]
    _, turn, _, requests = run_agent(stores, script, "Hello")
    assert turn.reply == "Hi there." and len(turn.errors) == 2 and len(requests) == 3
    assert "arguments of send_message are not valid JSON" in requests[1]["messages"][-1]["content"]
    assert "unknown tool 'shout'" in requests[2]["messages"][-1]["content"]


def test_json_action_mode_sends_the_schema_and_no_tools(stores: Stores) -> None:
    script = [content(say("Hello from the action."))]
    _, turn, pieces, requests = run_agent(stores, script, "Hi", tool_calling="json_action")
    assert turn.reply == "Hello from the action." == "".join(pieces)
    assert "tools" not in requests[0] and "tool_choice" not in requests[0]
    assert requests[0]["response_format"]["type"] == "json_schema"


def test_stream_tools_describes_failures_like_stream() -> None:
    with scripted_endpoint("error500") as (base_url, _):
        llm = client(base_url)
        with pytest.raises(LLMUnavailable, match="HTTP 500: model crashed"):
            list(llm.stream_tools([{"role": "user", "content": "hi"}], native_tools()))
        llm.close()
