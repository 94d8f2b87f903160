"""The master agent: an event comes in, and the agent takes steps (prompt -> one action ->
run the tool) until it yields; a send_message streams to whoever listens as it is written.

Every event, reply and tool call is written to recall storage before it is acted on
(journal.py). The model's output never reaches the user as an error: a malformed action goes
back to the model as an error it can correct (``max_errors`` times per event), then a short
fallback message is said instead.

The agent wires its parts together and runs the turn: one step (step.py) asking for a reply
of the form a request needs (step_request.py), its action carried out (dispatch.py), the
memories shown (shown_memories.py) and judged by the user's next message (feedback.py), the
window kept within its budget (window_keeper.py), and the user's message read before it is
sent (drafting.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from assistant.agent.about_user import constraints_for, facts_in, merged
from assistant.agent.actions import Action, ActionError
from assistant.agent.checks.recent import RecentReplies
from assistant.agent.checks.text import SENTENCE_END
from assistant.agent.compaction import Compactor
from assistant.agent.context import ContextWindow
from assistant.agent.dispatch import Dispatcher
from assistant.agent.drafting import Drafting
from assistant.agent.events import Event, HeartbeatTick, UserText, UserUtterance, from_user
from assistant.agent.feedback import ReplyFeedback
from assistant.agent.journal import Journal
from assistant.agent.reply_form import ReplyForm
from assistant.agent.shown_memories import ShownMemories
from assistant.agent.speculation import Tally
from assistant.agent.step import StepTaker
from assistant.agent.step_request import StepRequests, form_for
from assistant.agent.told import answer_told, asks_to_recall, told_note
from assistant.agent.tools import TOOLS, Stores, Tool, by_name
from assistant.agent.turn import AgentConfig, Turn, TurnIO, no_stage
from assistant.agent.window_keeper import WindowKeeper
from assistant.llm.priority import ForegroundGate, Hold
from assistant.llm.protocols import AgentLLM

log = logging.getLogger(__name__)

# Steps a heartbeat's turn may take: its one action, and one more if that failed.
TICK_STEPS = 2


def lifted_at_first_sentence(on_text: Callable[[str], None], hold: Hold) -> Callable[[str], None]:
    """``on_text``, lifting the reply's hold on the cores once the text shown holds a whole
    sentence: the background server was paused until the end of replies that streamed for
    20-30 s in a lived-in folder, and wrote no summary between them."""
    shown = ""

    def on(piece: str) -> None:
        nonlocal shown
        on_text(piece)
        if not hold.lifted:
            shown += piece
            if SENTENCE_END.search(shown):
                hold.lift()

    return on


class Agent:
    def __init__(
        self,
        llm: AgentLLM,
        stores: Stores,
        context: ContextWindow,
        config: AgentConfig | None = None,
        tools: Sequence[Tool] = TOOLS,
        conversation_id: str = "main",
        sleep: Callable[[float], None] | None = None,
        gate: ForegroundGate | None = None,
        compactor: Compactor | None = None,
        context_path: Path | None = None,
    ) -> None:
        config = config or AgentConfig()
        self.stores = stores
        self.context = context
        self.config = config
        self.tools = by_name(tools)
        # Held while an event is handled: background LLM work waits for it (priority.py).
        self.gate = gate or ForegroundGate()
        self.compactor = compactor
        # The user's words in the turn under way (empty between turns): a tool may read from
        # them what code reads better than the model (a reminder's time).
        self.heard = ""
        self.replies = RecentReplies()
        replies = self.replies
        self.window = WindowKeeper(context, llm, compactor, context_path, self.gate)
        self.journal = Journal(stores, context, self.window.lock, conversation_id)
        self.memories = ShownMemories(stores, context, config)
        self.feedback = ReplyFeedback(stores.stream)
        self.requests = StepRequests(
            llm, tools, context.config.reply_tokens, config.temperature, config.reply_design
        )
        self.drafting = Drafting(
            llm, context, self.window, self.memories, self.requests, self.tools, self.gate
        )
        self.dispatcher = Dispatcher(
            self.tools, stores, context, self.journal, replies, config.reply_design == "plain"
        )
        self.steps = StepTaker(
            config,
            context,
            self.requests,
            self.drafting,
            self.journal,
            self.dispatcher,
            self.window,
            replies,
            sleep,
        )

    @property
    def reads_ahead(self) -> bool:
        """Whether a swapped-in summary's note is read ahead at once (where the LLM is local)."""
        return self.window.reads_ahead

    @reads_ahead.setter
    def reads_ahead(self, value: bool) -> None:
        self.window.reads_ahead = value

    @property
    def compactions(self) -> int:
        """Summaries swapped in from the background so far."""
        return self.window.compactions

    @property
    def speculated(self) -> Tally:
        """How the replies speculated at the user's pauses ended."""
        return self.drafting.speculated

    def respond(
        self,
        event: Event,
        on_text: Callable[[str], None] = lambda text: None,
        cancel: threading.Event | None = None,
        on_stage: Callable[[str], None] = no_stage,
    ) -> Turn:
        """Handle one event; ``on_text`` gets each piece of a reply as it is written, and
        setting ``cancel`` stops a reply mid-stream (the delivered part is kept, marked).
        ``on_stage`` hears "memories" (retrieved) and "prompt_sent" (the first request)."""
        with self.gate.foreground() as hold, self.window.lock:
            self.heard = event.text if isinstance(event, UserText | UserUtterance) else ""
            self.replies.hear(self.heard)
            turn: Turn | None = None
            try:
                shown = lifted_at_first_sentence(on_text, hold)
                io = TurnIO(self.heard, shown, cancel or threading.Event(), on_stage)
                turn = self._respond(event, io)
                return turn
            finally:
                self.heard = ""
                self.drafting.drop()  # one the turn did not take (it asked otherwise)
                self.journal.observed()
                # The reply is out: the memories' utility is written now, not before it.
                self.feedback.end(turn)
                self.window.drafting = False
                self.window.after_turn()

    def _respond(self, event: Event, io: TurnIO) -> Turn:
        turn = Turn()
        prompt = event.prompt()
        user = from_user(event)
        held = ReplyForm()
        if isinstance(event, UserText | UserUtterance):
            held = form_for(event.text, self.tools)
        elif isinstance(event, HeartbeatTick):
            # Something to tell a user who may be spoken to: the step words it. Left to choose
            # between a message, an intention and silence, the 1.5B model kept an intention
            # for a clash and told a due intention "I'll ask tomorrow" (docs/BENCHMARKS.md,
            # "Speaking first").
            speak = event.may_speak
            held = ReplyForm(
                "send_message" if speak else None, tick=True, speak=speak, opening=event.opening
            )
        only = held.only
        if user and self.dispatcher.speaks_for_itself(only):
            self.dispatcher.acknowledge(turn, io.on_text)
        known = ""
        if isinstance(event, UserText | UserUtterance):
            human = self._keep_about_user(event.text)
            said = self.context.user_said()
            if held.only is None and answer_told(event.text, said, human):
                # A question about what the user told that names neither them nor anyone
                # ("When is the pottery class?") is answered from their words all the same;
                # one that asks for it as told opens saying it (asked freely, the 0.5B model
                # answered around it, and was asked again: a second wait).
                held = replace(held, grounded=True, recalling=asks_to_recall(event.text))
            told = told_note(event.text, said, human) if held.grounded else ""
            known = "\n".join(part for part in (constraints_for(event.text, human), told) if part)
        self.context.note_core_changes()  # the user may have edited it since the last turn
        # Before the event: small models heed the last message most, and it must be the
        # user's (pushed after it, the warning was what the 0.5B model answered).
        self.window.warn_if_full()
        shown = self.memories.prepared_for(prompt)
        if shown is None:
            shown = self.memories.retrieve(prompt)
        io.on_stage("memories")
        self.journal.record_event(event, prompt, shown, known)
        self.feedback.begin(event, shown)
        # The tool the next step is held to (by the schema or the offered tools): the one the
        # request needs (routing.py), then send_message once the model went round or looked
        # something up without answering.
        answer_now = False
        for step in range(TICK_STEPS if held.tick else self.config.max_steps):
            if step and turn.ahead and only is None:
                # The tool's step did not end the turn: what was said stands (a step asked again
                # for the same tool still has its word said ahead of its result).
                self.dispatcher.keep_said(turn.ahead, turn)
                turn.ahead = ""
            if self.window.manage_pressure(self.journal.event_message):
                turn.flushed = True
                self.memories.show_again(prompt, self.journal.event_message)
            outcome: Action | ActionError | None = (
                self._read_from_words(only, io.heard) if step == 0 else None
            )
            if outcome is None:
                outcome = self.steps.take(
                    io,
                    turn,
                    replace(held, only="send_message" if answer_now else only),
                    acknowledging=user and not answer_now,
                )
            if outcome is None:  # the LLM failed, or the user interrupted
                if turn.ahead:  # it was said (the tool's step itself streams nothing)
                    self.dispatcher.keep_said(turn.ahead, turn)
                return turn
            if isinstance(outcome, ActionError):
                turn.errors.append(str(outcome))
                log.warning("malformed action: %s", outcome)
                self.dispatcher.note_error(str(outcome), self.requests.native() is not None)
                if len(turn.errors) > self.config.max_errors:
                    self.dispatcher.say_fallback(turn, io.on_text)
                    return turn
                # Held to the same tool again: let free, the plain design's 0.5B model wrote
                # the error note back to the user as its reply, and no reminder was set.
                continue
            only = None
            if not self.dispatcher.run(outcome, turn):
                continue
            if held.tick:  # one action per heartbeat (the 1.5B model kept six intentions)
                return turn
            if self.tools[outcome.tool].speaks_result and user and not turn.reply:
                self.dispatcher.say(turn.steps[-1].result, turn, io.on_text, turn.ahead)
                return turn
            if self.dispatcher.repeated(outcome, turn):
                if answer_now or not user:
                    break
                answer_now = True
                self.context.push(
                    {
                        "role": "system",
                        "content": "[note] You already did that; its result is above. "
                        "Now answer the user with send_message.",
                    }
                )
                continue
            if outcome.request_heartbeat and not answer_now:
                continue
            if turn.reply or not user:
                return turn
            # The user is waiting: a step that saved or looked something up without asking
            # for another one (the 1.5B model does this) still gets a step to answer in.
            answer_now = True
            self.context.push(
                {"role": "system", "content": "[note] Now answer the user with send_message."}
            )
        if not turn.reply and user:
            self.dispatcher.say_fallback(turn, io.on_text)
        return turn

    def _keep_about_user(self, text: str) -> str:
        """What the user says of themselves into the human block (about_user.py), before the
        reply, so this turn's prompt already tells it; the block as it now reads."""
        core = self.stores.core
        block = core.blocks["human"].value if "human" in core.blocks else None
        if block is None:
            return ""
        updated = block
        for fact in facts_in(text):
            updated = merged(updated, fact)
        if updated == block:
            return block
        if not core.keep("human", updated):
            log.warning("the human block is full; not kept: %s", updated[len(block) :].strip())
            return block
        # The user's own words are in view: no note of the change (the 0.5B model wrote such
        # notes back as replies). A summary restates the block once the words leave the window.
        self.context.core_seen["human"] = updated
        return updated

    def _read_from_words(self, only: str | None, heard: str) -> Action | None:
        """The routed tool's call, read by code from the user's words where they hold all its
        arguments (no model step)."""
        tool = self.tools.get(only) if only is not None else None
        if tool is None or tool.read is None or not heard:
            return None
        arguments = tool.read(heard)
        return Action(tool.name, arguments, False) if arguments is not None else None

    def note(self, event: Event) -> None:
        """Tell the agent something it should know at its next turn, with no reply now (the
        user changed a memory on screen): into the window and recall storage."""
        self.journal.note(event.prompt())

    def heard_only(self, heard: str) -> None:
        """The last reply was spoken and the user cut in: only ``heard`` reached their ears
        (``Journal.heard_only``)."""
        self.journal.heard_only(heard)

    def compact_if_due(self) -> bool:
        """Summarise the window's oldest part in the background if it is past the compaction
        share (``WindowKeeper.compact_if_due``)."""
        return self.window.compact_if_due()

    def read_ahead(self) -> str | None:
        """Have the conversation's server read the prompt as it stands; returns why it could
        not, or None (``WindowKeeper.read_ahead``)."""
        return self.window.read_ahead()

    def prepare(self, text: str) -> bool:
        """The user has paused while writing ``text``: read its prompt ahead
        (``Drafting.prepare``). False if a turn is under way."""
        return self.drafting.prepare(text)

    def speculate(self, text: str) -> bool:
        """The user paused after saying ``text``, likely the whole turn: ask for its reply now
        (``Drafting.speculate``). False if a turn is under way."""
        return self.drafting.speculate(text)
