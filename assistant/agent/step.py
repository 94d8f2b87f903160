"""One step of a turn: the model asked for one action, its message streamed to the user as it
is written and passed through the reply checks while it comes (checks/: one may ask for the
reply again in another form, stop it, or leave a sentence out), the endpoint's failures retried
or worked round (a context overflow evicts into the summary and asks again)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator

from assistant.agent.actions import Action, ActionError
from assistant.agent.checks.check import Seen
from assistant.agent.checks.pipeline import ReplyChecks
from assistant.agent.checks.recent import RecentReplies
from assistant.agent.checks.runs import prompt_notes, remembered_user_words
from assistant.agent.context import ContextWindow
from assistant.agent.dispatch import Dispatcher
from assistant.agent.drafting import Drafting
from assistant.agent.journal import Journal
from assistant.agent.reply_form import ReplyForm
from assistant.agent.step_request import StepRequests
from assistant.agent.streaming import ReplyStream
from assistant.agent.tools import SendMessage
from assistant.agent.turn import AgentConfig, Turn, TurnIO
from assistant.agent.window_keeper import WindowKeeper
from assistant.llm.cancellable import cancellable
from assistant.llm.client import LLMContextOverflow, LLMError, LLMUnavailable
from assistant.llm.messages import StreamDelta
from assistant.llm.protocols import ToolCallingLLM

log = logging.getLogger(__name__)

# How many times one step's reply is asked for again by its checks at most: each re-ask's form
# differs, but two checks could ask back and forth, and each try is a wait the user sits
# through (chains of five tries were seen deep in a conversation with the 0.5B model).
REASKS = 4


class StepTaker:
    def __init__(
        self,
        config: AgentConfig,
        context: ContextWindow,
        requests: StepRequests,
        drafting: Drafting,
        journal: Journal,
        dispatcher: Dispatcher,
        window: WindowKeeper,
        replies: RecentReplies,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.config = config
        self.context = context
        self.requests = requests
        self.drafting = drafting
        self.journal = journal
        self.dispatcher = dispatcher
        self.window = window
        # The openings of the last few replies, which the next may not copy.
        self.replies = replies
        self._sleep = sleep

    def take(
        self, io: TurnIO, turn: Turn, form: ReplyForm, acknowledging: bool = False
    ) -> Action | ActionError | None:
        """Ask for one action (held to ``form``), streaming its message; None when there is
        none to act on. ``acknowledging``: once the action is seen to call a tool that speaks
        for itself, a word is said at once (the user's request is being done)."""
        on_text, cancel = io.on_text, io.cancel
        overflowed = False
        native = self.requests.native()
        separated = not turn.reply  # a second message this turn starts on a new line
        shown: list[str] = []
        # Whether any check acted on a try of this step: the window then keeps what was shown.
        altered = False

        def show(piece: str) -> None:
            nonlocal separated
            if piece:
                if not separated:
                    on_text("\n")
                    separated = True
                on_text(piece)
                shown.append(piece)

        attempt = reasks = 0
        while attempt < self.config.attempts:
            attempt += 1
            streamed = ReplyStream(native is not None, self.requests.plain(form, native))
            checks = ReplyChecks.for_step(form, self._seen(io), self.config.reply_checks)
            try:
                deltas = cancellable(self._ask(io, native, form), cancel)
                for delta in deltas:
                    self.journal.first_token()
                    show(checks.feed(streamed.feed(delta)))
                    if acknowledging and self.dispatcher.speaks_for_itself(streamed.tool_named):
                        acknowledging = False
                        if not (turn.ahead or turn.reply or shown):
                            self.dispatcher.acknowledge(turn, on_text)
                    if cancel.is_set() or checks.halted:
                        break
                deltas.close()  # a check stopped it: the server stops writing it
                if cancel.is_set():
                    self.dispatcher.interrupted("".join(shown), turn)
                    return None
                if not checks.halted:
                    show(checks.feed(streamed.flush()))
                show(checks.flush())
                checks.log()
                altered |= checks.altered
                asker = checks.reask
                if asker is not None:
                    reasks += 1
                    if reasks > REASKS:
                        log.warning("every try of the reply was asked again: giving up")
                        self.dispatcher.say_fallback(turn, on_text)
                        return None
                    form = asker.reasked(form)
                    attempt -= 1  # a check's re-ask is no failed attempt
                    continue
                break
            except LLMContextOverflow as error:
                if overflowed or streamed.text:
                    self._failed(turn, str(error))
                    return None
                overflowed = True
                log.warning("%s; evicting into the summary and trying again", error)
                before = self.journal.event_message
                turn.flushed |= self.window.finish_compaction(before) or self.window.flush(before)
            except LLMUnavailable as error:
                if streamed.text or attempt == self.config.attempts or cancel.is_set():
                    self._failed(turn, str(error))
                    return None
                log.warning("%s; trying again", error)
                self._wait(self.config.backoff_s * 2 ** (attempt - 1), cancel)
            except LLMError as error:
                self._failed(turn, str(error))
                return None
        else:
            self._failed(turn, "the LLM gave no usable reply")
            return None
        said, outcome = streamed.finish(self.dispatcher.tools)
        if altered and isinstance(outcome, Action) and outcome.tool == "send_message":
            # What is kept is what the user saw: a repeat left in the history invites more.
            message = SendMessage(message="".join(shown).strip())
            outcome = Action("send_message", message, outcome.request_heartbeat)
        if said:  # plain text written ahead of a tool call: it was said, and the call follows
            self.dispatcher.run(Action("send_message", SendMessage(message=said), True), turn)
        return outcome

    def _ask(
        self, io: TurnIO, native: ToolCallingLLM | None, form: ReplyForm
    ) -> Iterator[StreamDelta]:
        """The step's reply as it streams (``StepRequests.request``). The reply speculated at
        the user's pause is taken over if it was this very request."""
        request, ask = self.requests.request(self.context.messages(), native, form)
        io.on_stage("prompt_sent")
        speculation = self.drafting.taken_over(request)
        yield from speculation.take() if speculation is not None else ask()

    def _seen(self, io: TurnIO) -> Seen:
        """What the checks compare the step's reply with, as the prompt stands now."""
        block = self.context.core.blocks.get("human")
        human = block.value if block is not None else ""
        messages = self.context.messages()
        notes, facts = prompt_notes(messages, human)
        return Seen(
            heard=io.heard,
            prompt="\n".join(message["content"] for message in messages),
            recent=self.replies,
            human=human,
            said=(*remembered_user_words(messages), *self.context.user_said()),
            notes=notes,
            facts=facts,
        )

    def _failed(self, turn: Turn, message: str) -> None:
        log.warning("LLM failed: %s", message)
        turn.error = message

    def _wait(self, seconds: float, cancel: threading.Event) -> None:
        if self._sleep is not None:
            self._sleep(seconds)
        else:
            cancel.wait(seconds)
