"""The master agent's tools for background work: hand a task to a sub-agent, set a reminder."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from pydantic import Field

from assistant.agent.tools import Arguments, Stores, Tool
from assistant.tasks.manager import TaskManager
from assistant.tasks.reminders import (
    ReminderStore,
    addressed_to_the_user,
    asked_for_in,
    reminder_time,
    says_am_pm,
    spoken_time,
    time_named_in,
)

HANDED_OFF = "I'll work on that in the background and tell you when it's done."


class DelegateTask(Arguments):
    goal: str = Field(
        description="The task, complete in itself: a background worker with the user's "
        "memories does it alone and reports back."
    )


class SetReminder(Arguments):
    text: str = Field(description="What to remind the user of.")
    when: str = Field(description="When: 'in 10 minutes', 'tomorrow at 9', an ISO time.")


def read_delegation(words: str) -> DelegateTask | None:
    """A job asked for in the background, its goal in the user's own words: the request is
    complete in itself, and the 0.5B model's schema-held goal ran on as a token loop past its
    cap ("tooled_ua_10_10_10 ...") three times, and no task was started."""
    goal = " ".join(words.split())
    return DelegateTask(goal=goal) if goal else None


def background_tools(
    manager: TaskManager,
    reminders: ReminderStore,
    clock: Callable[[], datetime],
    reminder_added: Callable[[], None] = lambda: None,
    heard: Callable[[], str] = lambda: "",
) -> tuple[Tool, ...]:
    """``heard``: the user's words in the turn under way (a reminder's time is read from
    them when they name one)."""

    def delegate(_: Stores, arguments: DelegateTask) -> str:
        manager.delegate(arguments.goal)
        # Said as it is: a model asked to word it read the instructions aloud (tried by hand).
        # The tasks pane shows the goal, and the task's end wakes the agent to report it.
        return HANDED_OFF

    def remind(_: Stores, arguments: SetReminder) -> str:
        now = clock()
        due = time_named_in(heard(), now) or reminder_time(arguments.when, now)
        text = asked_for_in(heard(), now) or arguments.text
        reminder = reminders.add(addressed_to_the_user(text), due, source="agent")
        reminder_added()
        twelve_hour = says_am_pm(heard() or arguments.when)
        return f"I'll remind you {spoken_time(due, now, twelve_hour)}: {reminder.text}"

    def read_reminder(words: str) -> SetReminder | None:
        # Both the time and the text from the words: the 0.5B model's schema-held call ran on
        # past its token cap and came back unterminated three times, and no reminder was set.
        now = clock()
        text = asked_for_in(words, now)
        if text is None or time_named_in(words, now) is None:
            return None
        return SetReminder(text=text, when=words)

    return (
        Tool(
            "delegate_task",
            "Start a longer job (research in the user's memories, writing a note) in the "
            "background, so the user need not wait.",
            DelegateTask,
            delegate,
            speaks_result=True,
            read=read_delegation,
        ),
        Tool(
            "set_reminder",
            "Remind the user of something at a given time.",
            SetReminder,
            remind,
            speaks_result=True,
            read=read_reminder,
        ),
    )
