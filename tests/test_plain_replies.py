"""The plain reply design (docs/REPLIES.md): a message asked for as plain text with no tool
offered, kept in the window as said; a request code routes to a tool held to that tool's schema
and answered by the tool's own words; a re-asked reply told what to do differently."""

from __future__ import annotations

from typing import Any

import pytest

from assistant.agent.agent import Agent
from assistant.agent.context import ContextConfig, ContextWindow
from assistant.agent.events import UserText
from assistant.agent.instructions import instructions
from assistant.agent.step_request import RECALLING_GRAMMAR
from assistant.agent.tools import TOOLS, Stores, Tool
from assistant.agent.turn import ACKNOWLEDGED, AgentConfig
from assistant.tasks.agent_tools import DelegateTask, SetReminder
from tests.agent_helpers import ScriptedStream, action
from tests.test_agent import recalled

DELEGATED = "I'll work on it in the background."


def plain_agent(llm: ScriptedStream, stores: Stores, goals: list[str] | None = None) -> Agent:
    kept = goals if goals is not None else []

    def delegate(_: Stores, arguments: Any) -> str:
        kept.append(arguments.goal)
        return DELEGATED

    tools = (
        *TOOLS,
        Tool("set_reminder", "Remind.", SetReminder, lambda *_: "Reset.", speaks_result=True),
        Tool("delegate_task", "Background work.", DelegateTask, delegate, speaks_result=True),
    )
    context = ContextWindow(
        instructions(tools, "plain"), stores.core, ContextConfig(window_tokens=4096)
    )
    return Agent(llm, stores, context, AgentConfig(reply_design="plain"), tools=tools)


def test_a_reply_is_plain_text_asked_for_with_no_schema_and_kept_as_said(stores: Stores) -> None:
    llm = ScriptedStream("Congratulations on the new flat!", "Glad to hear it.")
    agent = plain_agent(llm, stores)
    turn = agent.respond(UserText("We signed the lease on our new flat today."))
    assert turn.reply == "Congratulations on the new flat!"
    assert llm.schemas == [None]
    agent.respond(UserText("It has a balcony."))
    # The second prompt holds the first reply as plain text: nothing in JSON to write back.
    assert {"role": "assistant", "content": "Congratulations on the new flat!"} in llm.calls[1]
    assert not any(m["content"].lstrip().startswith("{") for m in llm.calls[1][1:])
    assert ("assistant", "Congratulations on the new flat!") in recalled(stores)


def test_the_plain_instructions_hold_no_json_no_tools_and_no_example(stores: Stores) -> None:
    text = instructions(TOOLS, "plain")
    assert "{" not in text and "core_memory_append" not in text
    assert "User:" not in text and len(text.split()) < 300


def test_a_routed_reminder_is_held_to_its_schema_and_said_by_the_tool(stores: Stores) -> None:
    llm = ScriptedStream(action("set_reminder", text="water the ferns", when="at 6"))
    agent = plain_agent(llm, stores)
    turn = agent.respond(UserText("Remind me to water the ferns at 6."))
    assert llm.schemas[0] is not None
    assert turn.reply == f"{ACKNOWLEDGED} Reset."
    window = agent.context.messages()
    # The call leaves no JSON in the window and its result is not told twice.
    assert not any(m["content"].lstrip().startswith("{") for m in window[1:])
    assert not any(m["content"].startswith("[set_reminder]") for m in window)


def test_a_routed_call_that_came_back_empty_is_asked_again_for_the_same_tool(
    stores: Stores,
) -> None:
    llm = ScriptedStream("", action("set_reminder", text="water the ferns", when="at 6"))
    agent = plain_agent(llm, stores)
    turn = agent.respond(UserText("Remind me to water the ferns at 6."))
    # Both calls held to the reminder's schema; the error note is the model's, never said.
    assert len(llm.schemas) == 2 and all(schema is not None for schema in llm.schemas)
    assert "set_reminder" in str(llm.schemas[1])
    assert turn.reply == f"{ACKNOWLEDGED} Reset."
    assert [step.tool for step in turn.steps if step.tool != "send_message"] == ["set_reminder"]


def test_work_asked_for_in_the_background_starts_a_task(stores: Stores) -> None:
    goals: list[str] = []
    llm = ScriptedStream(action("delegate_task", goal="sum up the notes on the boiler"))
    turn = plain_agent(llm, stores, goals).respond(
        UserText("In the background, sum up what I said about the boiler.")
    )
    assert goals == ["sum up the notes on the boiler"]
    assert turn.reply.endswith(DELEGATED)


@pytest.mark.parametrize("reply", ["{bracing}", "`ok`"])
def test_a_short_reply_that_only_opened_like_an_action_is_said(stores: Stores, reply: str) -> None:
    pieces: list[str] = []
    turn = plain_agent(ScriptedStream(reply), stores).respond(
        UserText("Say something odd."), on_text=pieces.append
    )
    assert turn.reply == reply == "".join(pieces)


def test_a_leading_bracketed_tag_is_not_said(stores: Stores) -> None:
    llm = ScriptedStream("[reply] That sounds like a lovely walk.")
    turn = plain_agent(llm, stores).respond(UserText("I walked along the canal this morning."))
    assert turn.reply == "That sounds like a lovely walk."


@pytest.mark.parametrize(
    "written",
    [
        r'send_message("The market opens at 8, so you\'ll catch the early bus.")',
        'send_message(message="The market opens at 8, so you\'ll catch the early bus.")',
        '```json\n{\n  "action": "send_message",\n  "content": "The market opens at 8, so '
        "you'll catch the early bus.\"\n}\n```",
        '{"name": "send_message", "arguments": {"text": "The market opens at 8, so you\'ll '
        'catch the early bus."}}',
    ],
)
def test_a_reply_written_as_a_call_of_the_message_tool_says_only_its_message(
    stores: Stores, written: str
) -> None:
    llm = ScriptedStream(written)
    pieces: list[str] = []
    turn = plain_agent(llm, stores).respond(
        UserText("The market opens at 8 tomorrow."), on_text=pieces.append
    )
    said = "The market opens at 8, so you'll catch the early bus."
    assert turn.reply == said == "".join(pieces)


def test_a_refusal_is_asked_again_held_by_a_grammar_to_open_willingly(stores: Stores) -> None:
    llm = ScriptedStream("I'm sorry, but I can't help with that.", "Here is one: knock knock.")
    agent = plain_agent(llm, stores)
    turn = agent.respond(UserText("Tell me a joke about spoons."))
    assert turn.reply == "Here is one: knock knock."
    assert llm.grammars[0] is None
    grammar = llm.grammars[1]
    assert grammar is not None and grammar.startswith("root ::= (") and '"Here"' in grammar
    assert llm.calls[1][-1] == {"role": "user", "content": "Tell me a joke about spoons."}


def test_a_request_to_recall_what_was_told_opens_saying_it_at_once(stores: Stores) -> None:
    """Asked freely, the 0.5B model answered such requests around what it was told and was
    asked again; the first try is held to say it. A question whose answer was never told is
    asked freely (held so, the model would have to make one up)."""
    llm = ScriptedStream(
        "Noted.",
        "You told me that your aunt Berthe keeps bees in Vichy.",
        "I don't know where your uncle lives.",
    )
    agent = plain_agent(llm, stores)
    agent.respond(UserText("My aunt Berthe keeps bees in Vichy."))
    turn = agent.respond(UserText("Remind me what I told you about my aunt."))
    assert llm.grammars[1] == RECALLING_GRAMMAR
    assert turn.reply == "You told me that your aunt Berthe keeps bees in Vichy."
    agent.respond(UserText("Remind me where my uncle lives."))
    assert llm.grammars[2] is None
