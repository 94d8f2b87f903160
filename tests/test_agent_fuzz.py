"""1,000+ generated malformed model outputs through the action parser and the agent loop."""

from __future__ import annotations

import json
import random
import string

import pytest

from assistant.agent.actions import Action, ActionError, parse_action
from assistant.agent.agent import Agent
from assistant.agent.context import ContextConfig, ContextWindow
from assistant.agent.events import UserText
from assistant.agent.instructions import instructions
from assistant.agent.streaming import MessageStream
from assistant.agent.tools import Stores, by_name
from assistant.agent.turn import FALLBACK_MESSAGE, AgentConfig, Turn
from tests.agent_helpers import ScriptedStream, action, say

TOOLS = by_name()
VALID = [
    action("send_message", message="Hello there."),
    say("Working on it.", heartbeat=True),
    action("core_memory_append", True, label="human", content="Likes tea."),
    action("core_memory_replace", True, label="human", old_content="tea", new_content="coffee"),
    action("recall_search", True, query="birthday", page=1),
    action("archival_search", True, query="report", page=2),
    action("archival_insert", True, content="The report is due Friday."),
    action("memory_search", True, query="sister"),
]
WRONG_VALUES: list[object] = [None, 0, -1, 3.5, True, "", "x" * 50, [], [1, 2], {}, {"a": 1}]


def truncated(rng: random.Random) -> str:
    text = rng.choice(VALID)
    return text[: rng.randrange(0, len(text) - 1)]


def wrong_type(rng: random.Random) -> str:
    value = json.loads(rng.choice(VALID))
    place = rng.choice(["tool", "arguments", "request_heartbeat", "argument"])
    if place == "argument" and value["arguments"]:
        value["arguments"][rng.choice(list(value["arguments"]))] = rng.choice(WRONG_VALUES[:9])
    else:
        value[place if place != "argument" else "tool"] = rng.choice(WRONG_VALUES)
    return json.dumps(value)


def unknown_tool(rng: random.Random) -> str:
    name = rng.choice(
        ["shout", "SEND_MESSAGE", "send message", "", "\u00e9crire", "x" * 5000, "rm -rf /"]
    )
    return action(name, message="hi")


def missing_or_extra(rng: random.Random) -> str:
    value = json.loads(rng.choice(VALID))
    if rng.random() < 0.5 and value["arguments"]:
        del value["arguments"][rng.choice(list(value["arguments"]))]
    elif rng.random() < 0.5:
        del value[rng.choice(["tool", "arguments"])]
        if "tool" in value and "arguments" not in value and value["tool"] == "send_message":
            value["arguments"] = {"mesage": "typo"}
    else:
        value["arguments"]["unexpected"] = "field"
    return json.dumps(value)


def cut_inside_its_message(output: str) -> bool:
    message = MessageStream()
    message.feed(output)
    return bool(message.text.strip()) and not message.complete


def short_message(rng: random.Random) -> str:
    """A message's short form, broken: a wrong type, a missing or misspelt key, extra keys,
    or cut off."""
    good = say(rng.choice(["Hello there.", "Olá, Sid! 🎉", 'She said "hi"\n']))
    return rng.choice(
        [
            json.dumps({"message": rng.choice(WRONG_VALUES)}),
            json.dumps({"mesage": "typo"}),
            json.dumps({"message": "hi", "request_heartbeat": True, "extra": 1}),
            json.dumps({"message": "hi", "tool": rng.choice(WRONG_VALUES)}),
            good[: rng.randrange(0, len(good) - 1)],
            '{"message": "' + "".join(rng.choices(string.printable, k=50)),
        ]
    )


def huge(rng: random.Random) -> str:
    blob = "".join(rng.choices(string.printable, k=rng.choice([10_000, 100_000, 300_000])))
    return rng.choice(
        [
            json.dumps({"tool": blob, "arguments": {}}),
            json.dumps({"tool": "recall_search", "arguments": {"query": blob}}),
            '{"tool": "send_message", "arguments": {"message": "' + blob.replace('"', ""),
            blob,
        ]
    )


def not_utf8(rng: random.Random) -> str:
    raw = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200)))
    text = raw.decode("utf-8", "surrogateescape")
    return rng.choice(
        [
            text,
            '{"tool": "send_message", "arguments": {"message": "' + text,
            '{"tool": "' + text + '", "arguments": {}}',
            "\x00" * rng.randrange(1, 50),
        ]
    )


def garbage(rng: random.Random) -> str:
    return rng.choice(
        [
            "".join(rng.choices(string.printable, k=rng.randrange(0, 300))),
            "Sure! I'd be happy to help with that.",
            "```json\n" + truncated(rng) + "\n```",
            "",
            " \n\t ",
            "{}",
            "{{{{",
            "}{",
        ]
    )


def not_an_object(rng: random.Random) -> str:
    return json.dumps(rng.choice([[1, 2], 42, "send_message", True, None, [json.loads(VALID[0])]]))


def deep(rng: random.Random) -> str:
    depth = rng.choice([100, 1_000, 50_000])
    return rng.choice(["[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth])


def odd_json(rng: random.Random) -> str:
    return rng.choice(
        [
            '{"tool": "send_message", "arguments": {"message": NaN}}',
            '{"tool": "recall_search", "arguments": {"query": "x", "page": Infinity}}',
            '{"tool": "recall_search", "arguments": {"query": "x", "page": -3}}',
            '{"tool": "recall_search", "arguments": {"query": "x", "page": 1e400}}',
            "{'tool': 'send_message', 'arguments': {'message': 'hi'}}",
            '{"tool": "send_message", "arguments": {"message": "hi",},}',
            '{"tool": "send_message", "tool": "shout", "arguments": {"message": "hi"}}',
            '{"tool": "core_memory_append", "arguments": {"label": "boss", "content": "x"}}',
        ]
    )


GENERATORS = [
    (truncated, 200),
    (wrong_type, 160),
    (unknown_tool, 70),
    (missing_or_extra, 120),
    (short_message, 80),
    (huge, 40),
    (not_utf8, 120),
    (garbage, 140),
    (not_an_object, 50),
    (deep, 20),
    (odd_json, 100),
]


def malformed_outputs(seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    return [make(rng) for make, count in GENERATORS for _ in range(count)]


def test_the_parser_answers_every_malformed_output_with_an_error_or_an_action() -> None:
    outputs = malformed_outputs()
    assert len(outputs) >= 1_000
    errors = 0
    for output in outputs:
        try:
            parsed = parse_action(output, TOOLS)
        except ActionError as error:
            errors += 1
            message = str(error)
            assert "\n" not in message.strip("'") or message.startswith("the reply is not valid")
            assert len(message) < 600  # a huge reply is quoted, not copied
        else:
            assert isinstance(parsed, Action) and parsed.tool in TOOLS
    assert errors >= 0.9 * len(outputs)


def test_the_loop_survives_every_malformed_output(
    stores: Stores, caplog: pytest.LogCaptureFixture
) -> None:
    # Every third of each kind (the parser test above reads all of them): each step embeds and
    # retrieves for real, and the whole set took 35-50 s of the suite.
    outputs = malformed_outputs()[::3]
    llm = ScriptedStream(*outputs, say("Done."), chunk=64)
    budget = len(outputs) + 10
    context = ContextWindow(instructions(), stores.core, ContextConfig(window_tokens=4096))
    agent = Agent(llm, stores, context, AgentConfig(max_steps=budget, max_errors=budget))
    turns: list[Turn] = []
    while len(llm.calls) < len(outputs) + 1:
        turns.append(agent.respond(UserText(f"Turn {len(turns)}")))
        assert len(turns) < len(outputs)  # every call is one step: the loop moves on
    assert turns[-1].reply.endswith("Done.")
    # Each output was either acted on as a step or answered with an error the model reads.
    errors = sum(len(turn.errors) for turn in turns)
    # Fallback messages are the agent's own (a repeated step ends a turn with one).
    steps = sum(
        1
        for turn in turns
        for step in turn.steps
        if step.arguments.get("message") != FALLBACK_MESSAGE
    )
    # A message a reply check held back and asked for again (an earlier reply repeated:
    # checks/opening.py): its output is neither a step nor an error.
    asked_again = sum("check, reask:" in record.getMessage() for record in caplog.records)
    assert errors + steps + asked_again == len(outputs) + 1
    # A reply that stops inside its message (the token cap) was shown: it counts as said.
    cut = sum(1 for output in outputs if cut_inside_its_message(output))
    assert steps >= cut
    assert errors >= 0.9 * (len(outputs) - cut)
    told = sum(1 for call in llm.calls for m in call if m["content"].startswith("[error] "))
    assert told >= errors  # every error went back to the model (and stayed in view a while)
    assert all(turn.error is None for turn in turns)
