"""Acting on a step's action: a message said (kept in the window, recall storage and the memory
stream) or a tool run, its result told to the model; and the words code says in a turn instead
of the model (a fallback, a word at once for a tool that speaks for itself, what an
interrupted reply got out)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from assistant.agent.actions import Action
from assistant.agent.checks.recent import RecentReplies
from assistant.agent.context import ContextWindow
from assistant.agent.journal import Journal
from assistant.agent.tools import SendMessage, Stores, Tool
from assistant.agent.turn import ACKNOWLEDGED, FALLBACK_MESSAGE, INTERRUPTED, Step, Turn
from memory.stream import MemoryRequestError


class Dispatcher:
    def __init__(
        self,
        tools: Mapping[str, Tool],
        stores: Stores,
        context: ContextWindow,
        journal: Journal,
        replies: RecentReplies,
        plain: bool = False,
    ) -> None:
        self.tools = tools
        # The plain design: the history keeps messages as said and a tool's call only as its
        # result's note, so the model sees no JSON to write back (docs/REPLIES.md).
        self.plain = plain
        self.stores = stores
        self.context = context
        self.journal = journal
        # The openings of the last few replies, which the next may not copy.
        self.replies = replies

    def run(self, action: Action, turn: Turn) -> bool:
        """Record and run the action; False when the tool failed (the model is told why)."""
        self.journal.observed()  # the stores' writes stay in order
        arguments = action.arguments.model_dump()
        if action.tool == "send_message":
            message = str(arguments["message"])
            record_id = self.journal.said(message)
            self.context.push({"role": "assistant", "content": self._history(action)}, record_id)
            self.replies.add(message)
            turn.reply = f"{turn.reply}\n{message}".strip()
            turn.steps.append(Step(action.tool, arguments, "sent"))
            if action.request_heartbeat:
                self.context.push({"role": "system", "content": "[send_message] sent"})
            return True
        if not self.plain:
            self.context.push({"role": "assistant", "content": action.as_history()})
        self.journal.write_recall(
            "tool", f"{action.tool} {json.dumps(arguments, ensure_ascii=False)}"
        )
        try:
            result = self.tools[action.tool].run(self.stores, action.arguments)
            failed = False
        except (ValueError, LookupError, MemoryRequestError, OSError) as error:
            result, failed = f"error: {error}", True
        turn.steps.append(Step(action.tool, arguments, result, failed))
        self.journal.write_recall("tool", f"{action.tool} -> {result}")
        if not (self.plain and self.tools[action.tool].speaks_result and not failed):
            # In the plain design a result the tool says itself is in the window as said; a
            # note of it as well was written back by the 0.5B model as later replies.
            self.context.push({"role": "system", "content": f"[{action.tool}] {result}"})
        self.context.note_core_changes()
        return not failed

    def _history(self, action: Action) -> str:
        """What the window keeps of a message the assistant said."""
        if self.plain:
            return str(action.arguments.model_dump()["message"])
        return action.as_history()

    @staticmethod
    def repeated(action: Action, turn: Turn) -> bool:
        """A step that repeats one already taken this turn: the model is going round."""
        this = (action.tool, action.arguments.model_dump())
        return [(s.tool, s.arguments) for s in turn.steps].count(this) > 1

    def note_error(self, message: str, native: bool) -> None:
        """Tell the model its action was malformed (``native``: it answers in tool calls)."""
        wanted = "tool call" if native else "JSON action"
        self.context.push(
            {
                "role": "system",
                "content": f"[error] {message}. Reply again with one valid {wanted}.",
            }
        )

    def say_fallback(self, turn: Turn, on_text: Callable[[str], None]) -> None:
        self.say(FALLBACK_MESSAGE, turn, on_text)

    def say(
        self, message: str, turn: Turn, on_text: Callable[[str], None], ahead: str = ""
    ) -> None:
        """Tell the user ``message`` as written here, not by the model (after ``ahead``, already
        shown: one message with it)."""
        said = f"{ahead} {message}" if ahead else message
        on_text(said[len(ahead) :])
        self.keep_said(said, turn)

    def keep_said(self, message: str, turn: Turn) -> None:
        """Record ``message``, already shown, as said this turn."""
        self.run(Action("send_message", SendMessage(message=message), False), turn)

    def speaks_for_itself(self, tool: str | None) -> bool:
        """Whether ``tool`` says its own result to the user (a reminder's confirmation)."""
        return tool is not None and tool in self.tools and self.tools[tool].speaks_result

    @staticmethod
    def acknowledge(turn: Turn, on_text: Callable[[str], None]) -> None:
        """A word said at once for a request a tool that speaks for itself will answer: the
        model writes the tool's whole JSON action before its confirmation can be said (1.5 s
        on the 0.5B model, 2.5-3.5 s on the 1.5B: docs/BENCHMARKS.md, voice). Said before the
        step for a request routed to the tool, or as soon as the step names it."""
        on_text(ACKNOWLEDGED)
        turn.ahead = ACKNOWLEDGED

    def interrupted(self, delivered: str, turn: Turn) -> None:
        """The user cut the reply off: what was ``delivered`` is kept, marked."""
        turn.interrupted = True
        if delivered:
            kept = delivered + INTERRUPTED
            said = Action("send_message", SendMessage(message=kept), False)
            self.context.push({"role": "assistant", "content": self._history(said)})
            self.journal.write_recall("assistant", kept)
            turn.reply = f"{turn.reply}\n{kept}".strip()
