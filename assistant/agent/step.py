"""One step of a turn: the model asked for one action, its message streamed to the user as it
is written and watched while it comes (a refusal, undue sympathy, an old reply's or the user's
own opening is asked again to open willingly; an answer that says what it was not told is
asked again to admit it; an answer about the user written in their voice is turned to speak to
them; a message going round in a loop is stopped), the endpoint's failures retried or worked
round (a context overflow evicts into the summary and asks again)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace

from assistant.agent.about_user import about_food
from assistant.agent.actions import Action, ActionError
from assistant.agent.context import ContextWindow
from assistant.agent.copies import RecentReplies, echo_of
from assistant.agent.diet import DietCheck, excluded_foods
from assistant.agent.dispatch import Dispatcher
from assistant.agent.drafting import Drafting
from assistant.agent.grounding import GroundCheck, about_what_they_told
from assistant.agent.journal import Journal
from assistant.agent.loops import LoopStop
from assistant.agent.perspective import Perspective
from assistant.agent.refusal import RefusalGuard
from assistant.agent.step_request import ReplyForm, StepRequests
from assistant.agent.streaming import ReplyStream
from assistant.agent.sympathy import unwanted_openings
from assistant.agent.tools import SendMessage
from assistant.agent.turn import AgentConfig, Turn, TurnIO
from assistant.agent.window_keeper import WindowKeeper
from assistant.llm.cancellable import cancellable
from assistant.llm.client import LLMContextOverflow, LLMError, LLMUnavailable
from assistant.llm.messages import StreamDelta
from assistant.llm.protocols import ToolCallingLLM

log = logging.getLogger(__name__)

# Said before the user's message when a meal is asked for again (diet.py).
_LEAVE_OUT = (
    "The user does not eat {food}, as they told you: suggest something that keeps to what they eat."
)


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
        loop = LoopStop(self.replies.sentences())
        voice = Perspective(armed=False)
        foods = excluded_foods(self._human()) if about_food(io.heard) else ()

        def emit(piece: str) -> None:
            nonlocal separated
            if piece:
                if not separated:
                    on_text("\n")
                    separated = True
                on_text(piece)
                shown.append(piece)

        def show(piece: str) -> None:
            emit(voice.feed(piece))

        attempt = 0
        while attempt < self.config.attempts:
            attempt += 1
            plain = self.requests.plain(form, native)
            streamed = ReplyStream(native is not None, plain)
            guard = RefusalGuard(
                armed=not form.willing,
                unwanted=(
                    unwanted_openings(io.heard) + self.replies.openings() + echo_of(io.heard)
                ),
            )
            prompt = self._prompt_text()
            checked = (
                form.grounded and not form.admitting and about_what_they_told(io.heard, prompt)
            )
            ground = GroundCheck(prompt, armed=checked)
            voice = Perspective(armed=form.grounded)
            diet = DietCheck(foods, dropping=form.note is not None)
            try:
                deltas = cancellable(self._ask(io, native, form), cancel)
                for delta in deltas:
                    self.journal.first_token()
                    show(loop.feed(diet.feed(guard.feed(ground.feed(streamed.feed(delta))))))
                    if acknowledging and self.dispatcher.speaks_for_itself(streamed.tool_named):
                        acknowledging = False
                        if not (turn.ahead or turn.reply or shown):
                            self.dispatcher.acknowledge(turn, on_text)
                    stop = guard.refused or loop.looping or ground.invented or diet.named
                    if cancel.is_set() or stop:
                        break
                deltas.close()  # a refusal or a loop: the server stops writing it
                if loop.looping:
                    log.warning(
                        "the message went round in a loop; stopped after %d pieces", len(shown)
                    )
                if cancel.is_set():
                    self.dispatcher.interrupted("".join(shown), turn)
                    return None
                if guard.refused:
                    log.warning("the reply opened with a refusal, undue sympathy or an old reply")
                    form = replace(form, willing=True)
                    attempt -= 1
                    continue
                show(loop.feed(diet.feed(guard.feed(ground.flush()))))
                if ground.invented and not ground.cut:
                    log.warning(
                        "the answer said what it was not told %s; asking again", ground.invented
                    )
                    form = replace(form, admitting=True)
                    attempt -= 1
                    continue
                show(loop.feed(diet.feed(guard.flush())))
                show(loop.feed(diet.flush()))
                if diet.named is not None:
                    log.warning("the meal named %s, which the user does not eat", diet.named)
                    form = replace(form, note=_LEAVE_OUT.format(food=diet.named))
                    attempt -= 1
                    continue
                show(loop.flush())
                emit(voice.flush())
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
        cut = loop.dropped or ground.cut or voice.changed or diet.dropped or bool(foods and shown)
        if cut and isinstance(outcome, Action) and outcome.tool == "send_message":
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

    def _human(self) -> str:
        """The core memory's human block (what the user told of themselves)."""
        block = self.context.core.blocks.get("human")
        return block.value if block is not None else ""

    def _prompt_text(self) -> str:
        """All the prompt says (what an answer may take its facts from)."""
        return "\n".join(message["content"] for message in self.context.messages())

    def _failed(self, turn: Turn, message: str) -> None:
        log.warning("LLM failed: %s", message)
        turn.error = message

    def _wait(self, seconds: float, cancel: threading.Event) -> None:
        if self._sleep is not None:
            self._sleep(seconds)
        else:
            cancel.wait(seconds)
