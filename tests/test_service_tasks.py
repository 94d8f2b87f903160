"""Delegation, reminders and `brain tasks` through the service, over the real socket with the
real memory store and embedder; the LLM is a scripted endpoint that answers by what it is
asked (a sub-agent's step, the master agent's turn)."""

from __future__ import annotations

import asyncio
import io
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from assistant.agent.turn import ACKNOWLEDGED
from assistant.clients.connection import ServiceClient
from assistant.clients.task_terminal import answer_approval
from assistant.clients.task_terminal import tasks as list_tasks
from assistant.config import LoadedConfig
from assistant.protocol.common import Failed
from assistant.protocol.conversation import ReplyEnd, Say
from assistant.protocol.tasks import (
    AnswerApproval,
    ApprovalAsked,
    ApprovalSettled,
    CancelTask,
    Delegate,
    GetTasks,
    ReminderFired,
    TaskAccepted,
    Tasks,
)
from assistant.service.paths import OwnerLock
from assistant.tasks.agent_tools import HANDED_OFF
from tests.helpers.fake_openai import scripted_endpoint
from tests.helpers.service import InProcess, action, until
from tests.helpers.ui import wait_for
from tests.task_helpers import files_server
from ui.app import BrainApp
from ui.screens.approval import ApprovalScreen
from ui.screens.tasks import TasksScreen
from ui.widgets.chat import ChatLog, MessageView

RESULT = "Aya, your sister, moved to Lugano."


def step(tool: str, **arguments: Any) -> str:
    plan = [{"goal": "Find where Aya lives", "reason": "the user asked"}]
    return json.dumps({"plan": plan, "progress": "done", "tool": tool, "arguments": arguments})


def route(body: dict[str, Any]) -> str:
    messages = body.get("messages", [])
    last = str(messages[-1]["content"]) if messages else ""
    schema = json.dumps(body.get("response_format") or {})
    if '"plan"' in schema or '"progress"' in schema:  # a sub-agent's step
        if "shopping list" in str(messages[1]["content"]):
            if any("files__write_file result" in str(m["content"]) for m in messages):
                return step("finish", result="Done with the shopping list.")
            return step("files__write_file", name="list.txt", text="milk, eggs")
        if any("memory_search result" in str(m["content"]) for m in messages):
            return step("finish", result=RESULT)
        return step("memory_search", query="sister Aya")
    if last.startswith("[task "):
        return action(f"Your task is done: {RESULT}")
    if "in the background" in last:
        goal = {"goal": "Find where the user's sister Aya lives"}
        return json.dumps({"tool": "delegate_task", "arguments": goal, "request_heartbeat": True})
    if "remind me" in last.lower():
        # Not the time the user said: the one their words name is used (a small model's
        # `when` is often wrong).
        arguments = {"text": "stretch your legs", "when": "in 10 minutes"}
        return json.dumps(
            {"tool": "set_reminder", "arguments": arguments, "request_heartbeat": True}
        )
    return action("Noted.")


@pytest.fixture
def loaded(
    loaded_for: Callable[..., LoadedConfig],
    start_service: Callable[..., InProcess],
    sandbox: Path,
) -> Iterator[LoadedConfig]:
    """A service whose LLM is the scripted endpoint that answers by ``route``, with the test's
    MCP server configured for its sub-agents."""
    server = files_server(sandbox).model_dump()
    with scripted_endpoint("route", router=route) as (url, _):
        routed = loaded_for(**{"llm.base_url": url, "tasks.mcp_servers": json.dumps([server])})
        start_service(routed)
        yield routed


async def test_a_delegated_task_runs_and_the_agent_tells_the_user(
    loaded: LoadedConfig,
) -> None:
    client = await ServiceClient.connect(loaded, "tui", start=False)
    await client.send(Say(text="My sister Aya moved to Lugano.", ref="a"))
    await until(client, lambda u: isinstance(u, ReplyEnd))

    await client.send(Delegate(ref="d", goal="Find out where my sister lives"))
    accepted = (await until(client, lambda u: isinstance(u, TaskAccepted | Failed)))[-1]
    assert isinstance(accepted, TaskAccepted) and accepted.task.status == "queued"
    # The task ends; the master agent is woken and tells the user.
    told = (await until(client, lambda u: isinstance(u, ReplyEnd) and RESULT in u.text))[-1]
    assert isinstance(told, ReplyEnd) and told.text == f"Your task is done: {RESULT}"

    await client.send(GetTasks())
    listed = (await until(client, lambda u: isinstance(u, Tasks)))[-1]
    assert isinstance(listed, Tasks)
    [row] = listed.tasks
    assert row.id == accepted.task.id and row.status == "done" and row.result == RESULT
    assert [s.tool for s in row.steps] == ["memory_search", "finish"]
    assert "Lugano" in row.steps[0].result and row.plan and row.llm_calls == 2

    await client.send(CancelTask(ref="c", id=row.id))
    refused = (await until(client, lambda u: getattr(u, "ref", None) == "c"))[-1]
    assert isinstance(refused, Failed) and "already ended" in refused.text

    out, err = io.StringIO(), io.StringIO()
    assert await list_tasks(loaded, True, out, err) == 0
    listed_json = json.loads(out.getvalue())
    assert listed_json["running"] and listed_json["tasks"][0]["result"] == RESULT
    await client.close()

    # With the service gone (the last client left), `brain tasks` reads the records from disk.
    assert OwnerLock(loaded.settings.data_dir).wait_free(30)
    out = io.StringIO()
    assert await list_tasks(loaded, False, out, io.StringIO()) == 0
    assert "not running" in out.getvalue() and RESULT in out.getvalue()


async def replied(client: ServiceClient, text: str) -> ReplyEnd:
    """The end of the reply to ``text``, said to the service."""
    await client.send(Say(text=text, ref="said"))
    end = (await until(client, lambda u: isinstance(u, ReplyEnd)))[-1]
    assert isinstance(end, ReplyEnd)
    return end


async def test_the_agent_hands_a_task_off_and_says_so_in_its_own_words(
    loaded: LoadedConfig,
) -> None:
    client = await ServiceClient.connect(loaded, "tui", start=False)
    end = await replied(client, "Find out where Aya lives, in the background.")
    # No model step after the hand-off: the tool's confirmation is the reply, after the
    # word said as soon as the model's action named the tool.
    assert end.text == f"{ACKNOWLEDGED} {HANDED_OFF}"
    told = (await until(client, lambda u: isinstance(u, ReplyEnd) and RESULT in u.text))[-1]
    assert isinstance(told, ReplyEnd) and told.text == f"Your task is done: {RESULT}"
    await client.close()


async def test_a_reminder_set_by_the_agent_fires_on_time_and_is_shown(
    loaded: LoadedConfig,
) -> None:
    client = await ServiceClient.connect(loaded, "tui", start=False)
    end = await replied(client, "Remind me to stretch my legs in 3 seconds.")
    # The confirmation is the tool's own: no model step after a reminder is set.
    assert end.text == f"{ACKNOWLEDGED} I'll remind you in 3 seconds: stretch your legs"
    said_at = time.monotonic()
    fired = (await until(client, lambda u: isinstance(u, ReminderFired), timeout=15))[-1]
    assert isinstance(fired, ReminderFired) and fired.text == "stretch your legs"
    assert not fired.late and time.monotonic() - said_at < 3.5
    await client.close()


async def test_the_tasks_pane_delegates_shows_the_plan_and_result_and_a_reminder(
    loaded: LoadedConfig,
) -> None:
    app = BrainApp(loaded)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(lambda: app.conversation.link.client is not None, 30)
        await pilot.press("f4")
        pane = app.screen
        assert isinstance(pane, TasksScreen)
        await pilot.click("#task-goal")
        await pilot.press(*"Find out where my sister lives", "enter")
        await wait_for(lambda: pane.latest is not None and pane.latest.tasks, 10)
        await wait_for(lambda: pane.latest.tasks[0].status == "done", 20)  # type: ignore[union-attr]
        await pilot.pause()
        detail = str(pane.query_one("#task-detail", Static).render())
        assert f"Result: {RESULT}" in detail
        assert "Find where Aya lives" in detail and "memory_search" in detail
        await pilot.press("ctrl+x")  # a finished task cannot be cancelled
        await pilot.press("escape")
        # The reminder appears in the conversation.
        await pilot.click("#prompt")
        await pilot.press(*"Remind me to stretch my legs in 3 seconds.", "enter")
        chat = app.conversation.query_one(ChatLog)
        await wait_for(
            lambda: any("stretch your legs" in v.text for v in chat.query(MessageView)), 15
        )
        await pilot.press("ctrl+q")


async def delegate(client: ServiceClient, goal: str) -> TaskAccepted:
    """Delegate ``goal`` once the service can run tasks (it refuses while it starts)."""
    for attempt in range(60):
        await client.send(Delegate(ref=f"d{attempt}", goal=goal))
        answer = (await until(client, lambda u: isinstance(u, TaskAccepted | Failed)))[-1]
        if isinstance(answer, TaskAccepted):
            return answer
        assert isinstance(answer, Failed) and "starting" in answer.text, answer
        await asyncio.sleep(0.5)
    raise AssertionError("the service never began to run tasks")


async def test_a_call_outside_memory_waits_for_the_users_answer_through_the_service(
    loaded: LoadedConfig, sandbox: Path
) -> None:
    client = await ServiceClient.connect(loaded, "tui", start=False)
    await delegate(client, "Write my shopping list to a file")
    asked = (await until(client, lambda u: isinstance(u, ApprovalAsked), timeout=60))[-1]
    assert isinstance(asked, ApprovalAsked)
    approval = asked.approval
    assert approval.tool == "files__write_file" and "list.txt" in approval.arguments
    await client.send(GetTasks())
    listed = (await until(client, lambda u: isinstance(u, Tasks)))[-1]
    assert isinstance(listed, Tasks)
    [row] = listed.tasks
    assert row.status == "waiting" and row.waiting_for == approval
    out, err = io.StringIO(), io.StringIO()
    assert await list_tasks(loaded, False, out, err) == 0
    assert f"brain tasks --allow {row.id}" in out.getvalue()

    # A window that opens meanwhile is asked too.
    late = await ServiceClient.connect(loaded, "tui", start=False)
    again = (await until(late, lambda u: isinstance(u, ApprovalAsked)))[-1]
    assert isinstance(again, ApprovalAsked) and again.approval == approval
    await late.close()

    # Refused from the command line, by the task's id: nothing is written, and every window
    # hears that the question is settled.
    assert await answer_approval(loaded, row.id, False, out, err) == 0, err.getvalue()
    settled = (await until(client, lambda u: isinstance(u, ApprovalSettled)))[-1]
    assert isinstance(settled, ApprovalSettled) and settled.id == approval.id
    assert settled.allowed is False
    told = (await until(client, lambda u: isinstance(u, ReplyEnd) and "task" in u.text))[-1]
    assert isinstance(told, ReplyEnd)
    assert not (sandbox / "list.txt").exists()
    assert await answer_approval(loaded, row.id, True, out, err) == 1
    assert "nothing is waiting" in err.getvalue()

    # Allowed over the wire: the call runs once.
    await delegate(client, "Write my shopping list to a file again")
    asked = (await until(client, lambda u: isinstance(u, ApprovalAsked), timeout=60))[-1]
    assert isinstance(asked, ApprovalAsked)
    await client.send(AnswerApproval(ref="y", id=asked.approval.id, allow=True))
    answer = (await until(client, lambda u: getattr(u, "ref", None) == "y"))[-1]
    assert isinstance(answer, TaskAccepted) and answer.task.id == asked.approval.task_id
    await until(client, lambda u: isinstance(u, ReplyEnd) and "task" in u.text, timeout=30)
    assert (sandbox / "list.txt").read_text() == "milk, eggs"
    await client.close()


async def test_the_question_pops_up_in_the_tui_and_is_answered_there(
    loaded: LoadedConfig, sandbox: Path
) -> None:
    app = BrainApp(loaded)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(lambda: app.conversation.link.client is not None, 30)
        await pilot.click("#prompt")
        await pilot.press("f4")
        pane = app.screen
        assert isinstance(pane, TasksScreen)
        await pilot.press(*"Write my shopping list to a file", "enter")
        await wait_for(
            lambda: isinstance(app.screen, ApprovalScreen) and app.screen.query("#refuse"), 60
        )
        # Refusing has the focus: Enter does nothing outside.
        await wait_for(lambda: app.focused is not None and app.focused.id == "refuse", 5)
        question = str(app.screen.query_one("#approval-question", Static).render())
        assert "files__write_file" in question and "list.txt" in question
        await pilot.press("escape")  # later: the task keeps waiting, the pane shows it
        await wait_for(lambda: pane.latest is not None and pane.latest.tasks[0].waiting_for, 10)
        await pilot.pause()
        assert "Ctrl+Y to answer" in str(pane.query_one("#task-detail", Static).render())
        await pilot.press("ctrl+y")
        await wait_for(lambda: isinstance(app.screen, ApprovalScreen), 5)
        await pilot.press("y")
        await wait_for(lambda: (sandbox / "list.txt").exists(), 30)
        await wait_for(lambda: pane.latest.tasks[0].status == "done", 30)  # type: ignore[union-attr]
        # Ctrl+X cancels a waiting task, though the goal box (an Input: Ctrl+X cuts) has focus.
        await pilot.press(*"Write my shopping list to a file once more", "enter")
        await wait_for(lambda: isinstance(app.screen, ApprovalScreen), 60)
        await pilot.press("escape")
        await wait_for(lambda: pane.latest.tasks[0].status == "waiting", 10)  # type: ignore[union-attr]
        await pilot.press("ctrl+x")
        await wait_for(lambda: pane.latest.tasks[0].status == "cancelled", 10)  # type: ignore[union-attr]
        # Answered elsewhere: the dialog closes by itself.
        await pilot.press(*"Write my shopping list to a file at last", "enter")
        await wait_for(lambda: isinstance(app.screen, ApprovalScreen), 60)
        asking = app.screen
        assert isinstance(asking, ApprovalScreen)
        await answer_approval(loaded, asking.approval.id, False, io.StringIO(), io.StringIO())
        await wait_for(lambda: app.screen is pane, 10)
        await pilot.press("ctrl+q")
