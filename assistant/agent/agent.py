"""The master agent: an event comes in, and the agent takes steps (prompt -> one action ->
run the tool) until it yields; a send_message streams to whoever listens as it is written.

Every event, reply and tool call is written to recall storage before it is acted on, so
nothing acknowledged is lost if the process dies; user and assistant messages go to the memory
stream too, the user's once the model's first token is in (deferred.py), so the embedding and
the near-copy check do not hold up the prompt. The model's output never reaches the user as an
error: a malformed action goes back to the model as an error it can correct (``max_errors``
times per event), then a short fallback message is said instead.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assistant.agent.actions import Action, ActionError
from assistant.agent.compaction import SUMMARY_WORDS, CompactionStart, Compactor, summarise
from assistant.agent.context import MESSAGE_OVERHEAD_TOKENS, ContextWindow, ahead_of_a_turn
from assistant.agent.context_store import save_context
from assistant.agent.copies import RecentReplies
from assistant.agent.deferred import Deferred
from assistant.agent.draft_memories import DraftMemories
from assistant.agent.events import Event, UserText, UserUtterance, from_user
from assistant.agent.grounding import GroundCheck, about_what_they_told
from assistant.agent.loops import LoopStop
from assistant.agent.naming import named_in_news, saying
from assistant.agent.refusal import WILLING_PATTERN, RefusalGuard
from assistant.agent.routing import asks_about_their_life, first_tool
from assistant.agent.speculation import Request, Speculation, Tally
from assistant.agent.streaming import ReplyStream
from assistant.agent.sympathy import unwanted_openings
from assistant.agent.tools import (
    COMPOSED_PATTERN,
    TOOLS,
    UNKNOWN_PATTERN,
    SendMessage,
    Stores,
    Tool,
    action_schema,
    by_name,
    describe_tools,
    memories_block,
    native_tools,
)
from assistant.llm.cancellable import cancellable
from assistant.llm.client import LLMContextOverflow, LLMError, LLMUnavailable
from assistant.llm.messages import Message, StreamDelta, TextDelta
from assistant.llm.priority import ForegroundGate
from assistant.llm.protocols import AgentLLM, ToolCallingLLM
from memory.records import MemoryRecord
from memory.scoring import RetrievalWeights
from memory.stream import MemoryRequestError

log = logging.getLogger(__name__)

# How long a turn whose window filled waits for the background summary under way, before it
# writes one itself.
COMPACTION_WAIT_S = 120.0


def _no_stage(stage: str) -> None:
    """Nobody is told of the turn's stages."""


FALLBACK_MESSAGE = "Sorry, I could not put a reply together just now. Please try again."
INTERRUPTED = " [interrupted]"


@dataclass(frozen=True)
class AgentConfig:
    # Steps one event may take (a tool call that asks for a heartbeat chains another).
    max_steps: int = 6
    # Malformed actions sent back to the model for correction per event, before the fallback.
    max_errors: int = 2
    # Attempts at reaching an endpoint that is down, with back-off_s, 2 * backoff_s, ... between.
    attempts: int = 3
    backoff_s: float = 1.0
    retrieved_memories: int = 5
    # Answering a question needs what is relevant more than what is recent: on LoCoMo the
    # paper's equal weights found 0.069 of the evidence in the top 10, relevance alone 0.806
    # (docs/BENCHMARKS.md). Recency and importance still break near-ties.
    retrieval_weights: RetrievalWeights = field(
        default_factory=lambda: RetrievalWeights(recency=0.25, importance=0.25, relevance=1.0)
    )
    # A memory shown only when it is this near the event in meaning (cosine of the
    # embeddings): the best of 1,000 unrelated ones (0.06-0.30) were shown with every small-talk
    # message, read by the server at each turn and taken as context by a 0.5B model.
    least_similarity: float = 0.3
    temperature: float = 0.3


@dataclass(frozen=True)
class Step:
    tool: str
    arguments: dict[str, Any]
    result: str
    failed: bool = False


@dataclass
class Turn:
    """What one event led to."""

    reply: str = ""
    steps: list[Step] = field(default_factory=list)
    interrupted: bool = False
    # Malformed actions the model was told to correct.
    errors: list[str] = field(default_factory=list)
    # One line when the LLM could not be used (the event itself is kept).
    error: str | None = None
    flushed: bool = False
    # A word already said for a tool that speaks for itself (ACKNOWLEDGED), until its
    # confirmation follows in the same message or it is kept alone.
    ahead: str = ""


def instructions(tools: Sequence[Tool] = TOOLS) -> str:
    return (
        "You are Brain OS, a voice-first personal assistant on the user's own computer. You "
        "talk with the user like a kind, sensible friend. Your replies are spoken aloud: one "
        "or two short sentences.\n\n"
        f"{_HOW_TO_REPLY}"
        "Each step you write exactly one JSON object. To talk to the user: "
        '{"message": "<what you say>"}. To use another tool: '
        '{"tool": <name>, "arguments": {...}, "request_heartbeat": false}. Set '
        "request_heartbeat to true only when you need another step after this one (for "
        "example to search, then answer). Where the tools are offered to you as functions, "
        "call one instead (send_message to talk), with the same arguments and "
        "request_heartbeat.\n\n"
        f"{_examples(tools)}"
        "Your memory: core memory (below) is always in view; keep what you learn about the "
        "user there with core_memory_append and core_memory_replace. Older messages leave "
        "this window, but recall_search finds them. archival_insert and archival_search keep "
        "and find longer texts. memory_search searches everything you have observed and "
        "concluded. 'What you remember' before a message lists the memories retrieved for "
        "it; '[core memory]' notes tell what changed in core memory since it was written "
        "below.\n\n"
        f"{_background_help(tools)}"
        f"Tools:\n{describe_tools(tools)}"
    )


# What a person would say, in rules and examples: without them the packaged models answered
# news of a recital with condolences, refused a story, invented a dentist's name and copied the
# user's words back (docs/BENCHMARKS.md, "Judgement": 31 of 54 reply probes passed on the 1.5B
# model, 44 with these).
_HOW_TO_REPLY = (
    "How to reply:\n"
    "- News or plans: react in your own words as a friend would. Congratulate good news, say "
    'you are sorry about bad news, and simply note plans and facts (no "sorry" for them).\n'
    "- When they tell you about someone, say the person's name in your reply.\n"
    "- Questions about the user's life: answer only from the conversation and what you "
    "remember. If that does not hold the answer, say you don't know and ask them; never guess "
    "a name, date, time, age, place or number.\n"
    "- Harmless requests (a story, a joke, a poem, a definition, a fact, how to do "
    "something): do them; never refuse. In a poem, separate the lines with ' / '.\n"
    "- Never repeat the user's words back, and never describe yourself.\n\n"
)


# Said at once when a request goes to a tool that speaks for itself (``Agent._acknowledge``).
ACKNOWLEDGED = "Okay."


def _examples(tools: Sequence[Tool]) -> str:
    lines = [
        "Examples (the user's message, then your step):",
        "User: I'm seeing the dentist on Tuesday at 3.",
        '{"message": "Noted! Good luck at the dentist."}',
        "User: I got into the master's programme!",
        '{"message": "Congratulations! That\'s wonderful news."}',
        "User: My grandfather passed away last night.",
        '{"message": "I\'m so sorry about your grandfather."}',
        "User: My friend Sara just started a new job as a chef.",
        '{"message": "Good for Sara! A chef, how exciting."}',
        "User: What's my sister's phone number?",
        '{"message": "I don\'t know, you haven\'t told me. What is it?"}',
        "User: My friend Sara just moved to Leeds.",
        '{"message": "Sara in Leeds, nice! I\'ll remember that."}',
    ]
    if any(tool.name == "set_reminder" for tool in tools):
        lines += [
            "User: Remind me to call mum at 6.",
            '{"tool": "set_reminder", "arguments": {"text": "call mum", "when": "at 6"}, '
            '"request_heartbeat": false}',
        ]
    return "\n".join(lines) + "\n\n"


def _background_help(tools: Sequence[Tool]) -> str:
    """How to use the background tools, when the agent has them."""
    names = {tool.name for tool in tools}
    lines = []
    if "set_reminder" in names:
        lines.append(
            "When the user asks to be reminded of something, call set_reminder with what and "
            "when (their words, e.g. 'in 10 minutes'); you can do that."
        )
    if "delegate_task" in names:
        lines.append(
            "For a longer job (looking through their memories, writing a note) call "
            "delegate_task: a background worker does it and you are told when it finishes."
        )
    return "".join(line + "\n" for line in lines) + ("\n" if lines else "")


class Agent:
    def __init__(
        self,
        llm: AgentLLM,
        stores: Stores,
        context: ContextWindow,
        config: AgentConfig = AgentConfig(),
        tools: Sequence[Tool] = TOOLS,
        conversation_id: str = "main",
        sleep: Callable[[float], None] | None = None,
        gate: ForegroundGate | None = None,
        compactor: Compactor | None = None,
        context_path: Path | None = None,
    ) -> None:
        self.llm = llm
        self.stores = stores
        self.context = context
        self.config = config
        self.tools = by_name(tools)
        self.schema = action_schema(tools)
        self.native_tools = native_tools(tools)
        # A step held to one tool (answering the user, or what routing.py chose): the same
        # action format, narrowed to that tool.
        self.narrowed = {tool.name: (action_schema([tool]), native_tools([tool])) for tool in tools}
        # The answer to a question about the user's life: a message that says first whether
        # the answer is known (action_schema's ``grounded``).
        messages_only = [t for t in tools if t.name == "send_message"]
        self.grounded = action_schema(messages_only, True)
        # The message asked for after one that opened by refusing (refusal.py).
        self.willing = action_schema(messages_only, opening=WILLING_PATTERN)
        # A message asked for at once (routing.py): a poem's lines may break.
        self.composing = action_schema(messages_only, opening=COMPOSED_PATTERN)
        # The answer asked for after one that made up what it was not told (grounding.py).
        self.admitting = action_schema(messages_only, opening=UNKNOWN_PATTERN)
        self.conversation_id = conversation_id
        self._warned = False
        # The messages said in the last turn, and the memory-stream record of each, for a
        # barge-in to mark what was not heard.
        self._said: list[tuple[str, str | None]] = []
        # The openings of the last few replies, which the next may not copy.
        self._replies = RecentReplies()
        self._sleep = sleep
        # Held while an event is handled: background LLM work waits for it (priority.py).
        self.gate = gate or ForegroundGate()
        # Summarises the oldest messages off the reply path (None: only the blocking flush).
        self.compactor = compactor
        if compactor is not None:
            compactor.on_ready = self._compaction_ready
        # Where the window is saved after each turn, to be the same after a restart.
        self.context_path = context_path
        # Held while the window changes: a turn, a note, a compaction swapped in.
        self._window = threading.RLock()
        # A swapped-in summary's note is read ahead at once (set where the LLM is local).
        self.reads_ahead = False
        # Set from the first draft of a message read ahead until the message's turn ends.
        self._drafting = False
        # Drafts in the order they arrived, and the newest one whose prompt was made; held
        # while a draft's prompt is made and its speculation replaced.
        self._draft_order = itertools.count()
        self._draft_made = -1
        self._draft_lock = threading.Lock()
        # Told of the stages of the turn under way (respond's on_stage).
        self._on_stage: Callable[[str], None] = _no_stage
        # Summaries swapped in from the background so far.
        self.compactions = 0
        # The memories read ahead with the drafts of the message being written (``prepare``).
        self._drafts = DraftMemories(config.retrieved_memories)
        # The reply asked for at the user's last pause, until a turn takes it or drops it.
        self._speculation: Speculation | None = None
        self.speculated = Tally()
        # The message of the event being answered (what a flush adds goes before it).
        self._event_message: Message | None = None
        # The user's words in the turn under way (empty between turns): a tool may read from
        # them what code reads better than the model (a reminder's time).
        self.heard = ""
        # The user's message of this turn and the memory-stream record being written for it.
        self._observing: tuple[Message, Deferred[str | None]] | None = None

    def respond(
        self,
        event: Event,
        on_text: Callable[[str], None] = lambda text: None,
        cancel: threading.Event | None = None,
        on_stage: Callable[[str], None] = _no_stage,
    ) -> Turn:
        """Handle one event; ``on_text`` gets each piece of a reply as it is written, and
        setting ``cancel`` stops a reply mid-stream (the delivered part is kept, marked).
        ``on_stage`` hears "memories" (retrieved) and "prompt_sent" (the first request)."""
        with self.gate.foreground(), self._window:
            self._on_stage = on_stage
            self.heard = event.text if isinstance(event, UserText | UserUtterance) else ""
            try:
                return self._respond(event, on_text, cancel or threading.Event())
            finally:
                self.heard = ""
                self._on_stage = _no_stage
                self.drop_speculation()  # one the turn did not take (it asked otherwise)
                self._observed()
                self._drafting = False
                # A summary that finished during the turn, or while the user wrote its message,
                # goes in now the reply is out: its note is read while the user listens.
                if self._swap_in_compaction() and self.reads_ahead:
                    threading.Thread(target=self.read_ahead, name="read-ahead", daemon=True).start()
                self._after_turn()

    def _respond(
        self, event: Event, on_text: Callable[[str], None], cancel: threading.Event
    ) -> Turn:
        turn = Turn()
        prompt = event.prompt()
        only = self._routed(event)
        if self._acknowledges(only, event):
            self._acknowledge(turn, on_text)
        self.context.note_core_changes()  # the user may have edited it since the last turn
        # Before the event: small models heed the last message most, and it must be the
        # user's (pushed after it, the warning was what the 0.5B model answered).
        self._warn_if_full()
        shown = self._prepared_for(prompt)
        if shown is None:
            shown = self._retrieve(prompt)
        self._on_stage("memories")
        self._record_event(event, prompt, shown)
        # The tool the next step is held to (by the schema or the offered tools): the one the
        # request needs (routing.py), then send_message once the model went round or looked
        # something up without answering.
        # A request routed to a tool is not a question to answer from memory.
        grounded = only is None and self._asks(event)
        naming = (
            self._names(event.text, only) if isinstance(event, UserText | UserUtterance) else None
        )
        answer_now = False
        for step in range(self.config.max_steps):
            if step and turn.ahead:  # the tool's step did not end the turn: what was said stands
                self._keep_said(turn.ahead, turn)
                turn.ahead = ""
            if self._manage_pressure():
                turn.flushed = True
                self._show_again(prompt)
            outcome = self._step(
                on_text,
                cancel,
                turn,
                "send_message" if answer_now else only,
                grounded,
                acknowledging=from_user(event) and not answer_now,
                naming=naming,
            )
            only = None
            if outcome is None:  # the LLM failed, or the user interrupted
                if turn.ahead:  # it was said (the tool's step itself streams nothing)
                    self._keep_said(turn.ahead, turn)
                return turn
            if isinstance(outcome, ActionError):
                turn.errors.append(str(outcome))
                log.warning("malformed action: %s", outcome)
                self._note_error(str(outcome))
                if len(turn.errors) > self.config.max_errors:
                    self._say_fallback(turn, on_text)
                    return turn
                continue
            if not self._run(outcome, turn):
                continue
            if self.tools[outcome.tool].speaks_result and from_user(event) and not turn.reply:
                self._say(turn.steps[-1].result, turn, on_text, turn.ahead)
                return turn
            if self._repeated(outcome, turn):
                if answer_now or not from_user(event):
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
            if turn.reply or not from_user(event):
                return turn
            # The user is waiting: a step that saved or looked something up without asking
            # for another one (the 1.5B model does this) still gets a step to answer in.
            answer_now = True
            self.context.push(
                {"role": "system", "content": "[note] Now answer the user with send_message."}
            )
        if not turn.reply and from_user(event):
            self._say_fallback(turn, on_text)
        return turn

    # One step

    def _step(
        self,
        on_text: Callable[[str], None],
        cancel: threading.Event,
        turn: Turn,
        only: str | None = None,
        grounded: bool = False,
        acknowledging: bool = False,
        naming: str | None = None,
    ) -> Action | ActionError | None:
        """Ask for one action (of the tool ``only``, if set; a message ``grounded`` in what is
        known, for a question; one that says the name ``naming``), streaming its message; None
        when there is none to act on. ``acknowledging``: once the action is seen to call a
        tool that speaks for itself, a word is said at once (the user's request is being
        done)."""
        overflowed = False
        asked_again = False
        admitting = False
        native = self._native_llm()
        separated = not turn.reply  # a second message this turn starts on a new line
        shown: list[str] = []
        loop = LoopStop()

        def show(piece: str) -> None:
            nonlocal separated
            if piece:
                if not separated:
                    on_text("\n")
                    separated = True
                on_text(piece)
                shown.append(piece)

        attempt = 0
        while attempt < self.config.attempts:
            attempt += 1
            streamed = ReplyStream(native is not None)
            guard = RefusalGuard(
                armed=not asked_again,
                unwanted=unwanted_openings(self.heard) + self._replies.openings(),
            )
            prompt = self._prompt_text()
            checked = grounded and not admitting and about_what_they_told(self.heard, prompt)
            ground = GroundCheck(prompt, armed=checked)
            try:
                deltas = cancellable(
                    self._ask(native, only, grounded, asked_again, admitting, naming), cancel
                )
                for delta in deltas:
                    if self._observing is not None:
                        self._observing[1].start()
                    show(loop.feed(guard.feed(ground.feed(streamed.feed(delta)))))
                    if acknowledging and self._speaks_for_itself(streamed.tool_named):
                        acknowledging = False
                        if not (turn.ahead or turn.reply or shown):
                            self._acknowledge(turn, on_text)
                    if cancel.is_set() or guard.refused or loop.looping or ground.invented:
                        break
                deltas.close()  # a refusal or a loop: the server stops writing it
                if loop.looping:
                    log.warning(
                        "the message went round in a loop; stopped after %d pieces", len(shown)
                    )
                if cancel.is_set():
                    self._interrupted("".join(shown), turn)
                    return None
                if guard.refused:
                    log.warning("the reply opened with a refusal, undue sympathy or an old reply")
                    asked_again = True
                    attempt -= 1
                    continue
                show(loop.feed(guard.feed(ground.flush())))
                if ground.invented and not ground.cut:
                    log.warning(
                        "the answer said what it was not told %s; asking again", ground.invented
                    )
                    admitting = True
                    attempt -= 1
                    continue
                show(loop.feed(guard.flush()))
                show(loop.flush())
                break
            except LLMContextOverflow as error:
                if overflowed or streamed.text:
                    self._failed(turn, str(error))
                    return None
                overflowed = True
                log.warning("%s; evicting into the summary and trying again", error)
                turn.flushed |= self._finish_compaction() or self._flush()
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
        said, outcome = streamed.finish(self.tools)
        cut = loop.dropped or ground.cut
        if cut and isinstance(outcome, Action) and outcome.tool == "send_message":
            # What is kept is what the user saw: a repeat left in the history invites more.
            message = SendMessage(message="".join(shown).strip())
            outcome = Action("send_message", message, outcome.request_heartbeat)
        if said:  # plain text written ahead of a tool call: it was said, and the call follows
            self._run(Action("send_message", SendMessage(message=said), True), turn)
        return outcome

    def _native_llm(self) -> ToolCallingLLM | None:
        """The LLM when the tools go to it as native tool calls (asked anew each step)."""
        llm = self.llm
        return llm if isinstance(llm, ToolCallingLLM) and llm.tool_calling == "native" else None

    def _ask(
        self,
        native: ToolCallingLLM | None,
        only: str | None = None,
        grounded: bool = False,
        willing: bool = False,
        admitting: bool = False,
        naming: str | None = None,
    ) -> Iterator[StreamDelta]:
        """The step's reply as it streams: with the tools offered natively, or (no ``native``)
        held to the action schema, its text as content; ``only``: that tool only; ``willing``:
        a message that opens willingly (after a refusal); ``admitting``: one that says it does
        not know (after an answer that made something up). The reply speculated at the user's
        pause is taken over if it was this very request."""
        request, ask = self._request(
            self.context.messages(), native, only, grounded, willing, admitting, naming
        )
        self._on_stage("prompt_sent")
        speculation, self._speculation = self._speculation, None
        if speculation is not None:
            if speculation.request == request:
                log.info("the turn takes over the reply speculated at the pause")
                self.speculated.taken += 1
                yield from speculation.take()
                return
            log.info("the turn asks anew: its request is not the one speculated at the pause")
            self.speculated.dropped += 1
            speculation.cancel()
        yield from ask()

    def _request(
        self,
        messages: list[Message],
        native: ToolCallingLLM | None,
        only: str | None,
        grounded: bool = False,
        willing: bool = False,
        admitting: bool = False,
        naming: str | None = None,
    ) -> tuple[Request, Callable[[], Iterator[StreamDelta]]]:
        """A step's request, comparable, and how to send it."""
        max_tokens = self.context.config.reply_tokens
        temperature = self.config.temperature
        schema, tools = self.schema, self.native_tools
        if only is not None and only in self.narrowed:
            schema, tools = self.narrowed[only]
        if only == "send_message":
            schema = self.composing
        if grounded and only in (None, "send_message"):
            # Answered at once: retrieval has just searched the memory with the question
            # itself, and offered the tools as well the 1.5B model searched again for 5 of 12
            # questions (a step of 2-4 s) and then said it did not know what three hours are
            # in minutes.
            schema = self.grounded
        if willing:
            schema = self.willing
        if admitting:
            schema = self.admitting
        elif naming is not None and not grounded:
            schema = self._naming(naming, only, willing)
        if native is not None:
            request = Request.of(
                messages, tools=tools, max_tokens=max_tokens, temperature=temperature
            )
            return request, lambda: native.stream_tools(
                messages, tools, max_tokens=max_tokens, temperature=temperature
            )

        def text() -> Iterator[StreamDelta]:
            for chunk in self.llm.stream(
                messages, max_tokens=max_tokens, temperature=temperature, schema=schema
            ):
                yield TextDelta(chunk)

        options = {"schema": schema, "max_tokens": max_tokens, "temperature": temperature}
        return Request.of(messages, **options), text

    def _names(self, text: str, only: str | None) -> str | None:
        """The person a message answering ``text`` must name (naming.py), if any; none for a
        request routed to a tool (a poem about Ana keeps the poem's pattern)."""
        return named_in_news(text) if only is None else None

    def _naming(self, name: str, only: str | None, willing: bool) -> dict[str, Any]:
        """The action schema of a step whose message says ``name`` (held to open willingly
        as well, or to the tool ``only``, as the step is)."""
        if willing or only == "send_message":
            tools = [self.tools["send_message"]]
        else:
            tools = [self.tools[only]] if only in self.tools else list(self.tools.values())
        return action_schema(tools, opening=saying(name, WILLING_PATTERN if willing else None))

    def _prompt_text(self) -> str:
        """All the prompt says (what an answer may take its facts from)."""
        return "\n".join(message["content"] for message in self.context.messages())

    @staticmethod
    def _asks(event: Event) -> bool:
        """Whether the event is the user's question about their life (its answer held to what
        is known)."""
        return isinstance(event, UserText | UserUtterance) and asks_about_their_life(event.text)

    def _routed(self, event: Event) -> str | None:
        """The tool a user's message must be answered with first (routing.py), if any."""
        if isinstance(event, UserText | UserUtterance):
            return first_tool(event.text, self.tools)
        return None

    @staticmethod
    def _repeated(action: Action, turn: Turn) -> bool:
        """A step that repeats one already taken this turn: the model is going round."""
        this = (action.tool, action.arguments.model_dump())
        return [(s.tool, s.arguments) for s in turn.steps].count(this) > 1

    def _run(self, action: Action, turn: Turn) -> bool:
        """Record and run the action; False when the tool failed (the model is told why)."""
        self._observed()  # the stores' writes stay in order
        arguments = action.arguments.model_dump()
        if action.tool == "send_message":
            message = str(arguments["message"])
            record_id = self._remember("assistant", message)
            self.context.push({"role": "assistant", "content": action.as_history()}, record_id)
            self._said.append((message, record_id))
            self._replies.add(message)
            turn.reply = f"{turn.reply}\n{message}".strip()
            turn.steps.append(Step(action.tool, arguments, "sent"))
            if action.request_heartbeat:
                self.context.push({"role": "system", "content": "[send_message] sent"})
            return True
        self.context.push({"role": "assistant", "content": action.as_history()})
        self._recall("tool", f"{action.tool} {json.dumps(arguments, ensure_ascii=False)}")
        try:
            result = self.tools[action.tool].run(self.stores, action.arguments)
            failed = False
        except (ValueError, LookupError, MemoryRequestError, OSError) as error:
            result, failed = f"error: {error}", True
        turn.steps.append(Step(action.tool, arguments, result, failed))
        self._recall("tool", f"{action.tool} -> {result}")
        self.context.push({"role": "system", "content": f"[{action.tool}] {result}"})
        self.context.note_core_changes()
        return not failed

    # Context

    def _warn_if_full(self) -> None:
        """Warn the model once the window passes warning_share (once until a compaction)."""
        pressure = self.context.pressure()
        if pressure >= self.context.config.warning_share and not self._warned:
            self._warned = True
            self.context.push(
                {
                    "role": "system",
                    "content": (
                        f"[memory pressure] The conversation fills {pressure:.0%} of your "
                        "context window. Older messages will soon be replaced by a summary: "
                        "save anything important with core_memory_append or archival_insert."
                    ),
                }
            )

    def _manage_pressure(self) -> bool:
        """At flush_share, inside a turn: swap in the background summary under way (waited
        for), else evict into a summary written now. Returns whether the window was made
        smaller."""
        flush_share = self.context.config.flush_share
        if self.context.pressure() < flush_share:
            return False
        if self._finish_compaction() and self.context.pressure() < flush_share:
            return True
        return self._flush()

    def _finish_compaction(self) -> bool:
        """The window filled before the background summary was done: wait for it (while the
        turn waits, the cores are the background server's) and swap it in before the event."""
        compactor = self.compactor
        if compactor is None or not compactor.busy:
            return False
        if not compactor.wait(COMPACTION_WAIT_S):
            return False
        return self._swap_in_compaction(before=self._event_message)

    def _flush(self) -> bool:
        """Evict about half the FIFO (more if the prompt still would not be under the
        warning share) into a new recursive summary."""
        evicted = self.context.evict()
        while evicted and self.context.pressure() >= self.context.config.warning_share:
            more = self.context.evict()
            if not more:
                break
            evicted += more
        if not evicted:
            return False
        # On the background server where there is one: the conversation's keeps its cache.
        ask = self.compactor.ask if self.compactor is not None else self._ask_summary
        summary = summarise(ask, self.context.summary, evicted)
        self.context.add_summary(summary, before=self._event_message)
        self._warned = False
        log.info("evicted %d messages into the summary", len(evicted))
        return True

    def _show_again(self, prompt: str) -> None:
        """After a flush inside a turn: memories for the event that were left out as in
        view, and were evicted with the messages that showed them, are shown before it."""
        shown = self._retrieve(prompt, touch=False)
        context = self.context
        room = context.config.flush_share * context.budget - context.tokens() - 1
        while shown and context.count(memories_block(shown)) + MESSAGE_OVERHEAD_TOKENS > room:
            shown.pop()  # the least relevant first: what fits is shown
        if shown:
            message: Message = {"role": "system", "content": memories_block(shown)}
            ids = [record.id for record in shown]
            context.insert(message, before=self._event_message, shows=ids)

    def _ask_summary(self, prompt: list[Message]) -> str:
        return self.llm.complete(prompt, max_tokens=SUMMARY_WORDS * 2, temperature=0.0)

    # Compaction off the reply path

    def _after_turn(self) -> None:
        """Save the window, and start summarising its oldest part in the background when it
        has filled past the compaction share."""
        if self.context_path is not None:
            save_context(self.context_path, self.context)
        compactor = self.compactor
        if compactor is None or compactor.busy:
            return
        context = self.context
        if context.pressure() < context.config.compact_share:
            return
        covers = tuple(context.fifo[: context.eviction_count()])
        compactor.start(CompactionStart(previous=context.summary, covers=covers))

    def _swap_in_compaction(self, before: Message | None = None) -> bool:
        """Put a finished summary in place of the messages it covers (the caller holds the
        window), its note before ``before`` if given. A summary of messages no longer at the
        head of the FIFO (a blocking flush came first) is dropped."""
        compactor = self.compactor
        done = compactor.take() if compactor is not None else None
        if compactor is None or done is None:
            return False
        if not self.context.compact(done.summary, done.start.covers, before):
            log.info("a background summary was overtaken by a flush; dropped")
            return False
        self._warned = False
        self.compactions += 1
        if self.context_path is not None:
            save_context(self.context_path, self.context)
        log.info("swapped in a summary of %d messages", len(done.start.covers))
        return True

    def _compaction_ready(self) -> None:
        """A summary is done: swapped in now, and its note read ahead so the next turn need
        not read it, if the window is free and the user is not writing the next message
        (its drafts were read ahead against the window as it is); else at the end of the next
        turn, once its reply is out."""
        if self._drafting or not self._window.acquire(blocking=False):
            return
        try:
            swapped = self._swap_in_compaction()
        finally:
            self._window.release()
        if swapped and self.reads_ahead:
            self.read_ahead()

    def read_ahead(self) -> str | None:
        """Have the conversation's server read the prompt as it stands (its cache then holds
        it, and the next turn reads only what is new): one token asked, after a placeholder
        message so the last real one is read as the next turn will send it. Returns why it
        could not, or None."""
        with self._window:
            prompt = ahead_of_a_turn(self.context.messages())
        try:
            self.llm.complete(prompt, max_tokens=1, temperature=0.0)
        except LLMError as error:
            log.info("could not read the prompt ahead: %s", error)
            return str(error)
        return None

    # Reading a message before it is sent

    def prepare(self, text: str) -> bool:
        """The user has paused while writing ``text`` (a draft, or speech still being
        recognised): retrieve its memories and have the conversation's server read the prompt
        the turn would send, so if that is what comes, the turn reads almost nothing new. The
        window is not changed and nothing is recorded; a different message later only wastes
        the read. False if a turn is under way (it is not disturbed)."""
        arrived = next(self._draft_order)
        with self._draft_lock:
            ahead = self._draft_prompt(text, arrived)
            if ahead is None:
                return False
            self.drop_speculation()  # the user went on speaking: it was not the turn
        try:
            self.llm.complete(ahead, max_tokens=1, temperature=0.0)
        except LLMError as error:
            log.info("could not read the draft ahead: %s", error)
        return True

    def speculate(self, text: str) -> bool:
        """The user paused after saying ``text``, which is likely the whole turn: send the
        turn's first request now, as :meth:`prepare` would read it, and let the model write
        its reply while the end-of-turn silence runs out (assistant/agent/speculation.py).
        The turn takes the reply over if it sends the same request; any speculation before is
        dropped. False if a turn is under way."""
        arrived = next(self._draft_order)
        with self._draft_lock:
            ahead = self._draft_prompt(text, arrived)
            if ahead is None:
                return False
            only = first_tool(text, self.tools)
            grounded = only is None and asks_about_their_life(text)
            naming = self._names(text, only)
            request, ask = self._request(ahead, self._native_llm(), only, grounded, naming=naming)
            self.drop_speculation()
            self._speculation = Speculation(request, ask, self.gate.foreground)
        return True

    def drop_speculation(self) -> None:
        """Stop the reply speculated at the last pause, if a turn has not taken it."""
        speculation, self._speculation = self._speculation, None
        if speculation is not None:
            self.speculated.dropped += 1
            speculation.cancel()

    def _draft_prompt(self, text: str, arrived: int) -> list[Message] | None:
        """The prompt a turn saying ``text`` would send now, with the memories its drafts
        carry; None while a turn holds the window, for nothing, or for a draft that arrived
        before one already made (drafts come from more than one thread: a word's read ahead
        must not drop the speculation on the sentence typed after it). Called holding
        ``_draft_lock``."""
        if not text.strip() or arrived < self._draft_made:
            return None
        self._draft_made = arrived
        if not self._window.acquire(blocking=False):
            return None
        try:
            self._drafting = True
            in_view = frozenset(self.context.in_view())
            shown = self._drafts.for_draft(text, in_view, self._rank)
            ahead = self.context.messages()
            block = memories_block(shown)
            if block:
                ahead.append({"role": "system", "content": block})
            ahead.append({"role": "user", "content": text})
        finally:
            self._window.release()
        log.debug("a draft of %d characters (%d memories)", len(text), len(shown))
        return ahead

    def _prepared_for(self, prompt: str) -> list[MemoryRecord] | None:
        """The memories to show with ``prompt`` carried from its drafts read ahead, if any
        were and nothing in view changed since (then the server has read most of the prompt);
        marked as used now."""
        shown = self._drafts.for_message(prompt, frozenset(self.context.in_view()), self._rank)
        if shown is None:
            return None
        ids = [record.id for record in shown]
        if ids:
            try:
                self.stores.stream.mark_accessed(ids)
            except (ValueError, MemoryRequestError, OSError) as error:
                log.warning("could not mark the prepared memories as used: %s", error)
        return shown

    def _rank(self, prompt: str, wanted: int) -> list[MemoryRecord]:
        """The ``wanted`` memories most worth showing for a message not yet sent."""
        return self._retrieve(prompt, touch=False, wanted=wanted)

    def _retrieve(
        self, prompt: str, touch: bool = True, wanted: int | None = None
    ) -> list[MemoryRecord]:
        """The memories most worth showing for this event (``wanted``, else as configured),
        leaving out those the FIFO shows already (their messages, or an earlier event's
        retrieved memories)."""
        wanted = self.config.retrieved_memories if wanted is None else wanted
        if wanted < 1:
            return []
        in_view = self.context.in_view()
        try:
            found = self.stores.stream.retrieve(
                prompt,
                k=wanted + len(in_view),
                weights=self.config.retrieval_weights,
                touch=touch,
            )
        except (ValueError, MemoryRequestError, OSError) as error:
            log.warning("memory retrieval failed: %s", error)
            return []
        near = [m for m in found if m.similarity >= self.config.least_similarity]
        return [m.record for m in near if m.record.id not in in_view][:wanted]

    # Records

    def _record_event(self, event: Event, prompt: str, shown: Sequence[MemoryRecord]) -> None:
        self._said = []
        retrieved = memories_block(shown)
        ids = [record.id for record in shown]
        if from_user(event):
            # The one write the prompt waits for: the words are kept if the process dies.
            self._recall("user", prompt)
            message: Message = {"role": "user", "content": prompt}
            self.context.begin_event(message, None, retrieved, ids)
            self._observing = (message, Deferred(lambda: self._observe("user", prompt)))
        else:
            self.context.begin_event({"role": "system", "content": prompt}, None, retrieved, ids)
            self._recall("system", prompt)
        self._event_message = self.context.fifo[-1]

    def _observed(self) -> None:
        """Wait for the user's message to be in the memory stream (started now if the model
        gave no token), and let the window know its record."""
        if self._observing is None:
            return
        (message, observation), self._observing = self._observing, None
        record_id = observation.result()
        if record_id is not None:
            self.context.also_shows(message, record_id)

    def _remember(self, role: str, text: str) -> str | None:
        """Into recall storage and, as an observation, into the memory stream; returns the
        stream record's id."""
        self._recall(role, text)
        return self._observe(role, text)

    def _observe(self, role: str, text: str) -> str | None:
        """Into the memory stream as an observation; returns the record's id."""
        name = "User" if role == "user" else "Brain OS"
        try:
            return self.stores.stream.add(f"{name}: {text}", source=role).id
        except (ValueError, MemoryRequestError, OSError) as error:
            log.warning("could not add to the memory stream: %s", error)
            return None

    def _recall(self, role: str, text: str) -> None:
        try:
            self.stores.recall.append(role, text, conversation_id=self.conversation_id)
        except (ValueError, OSError) as error:
            log.warning("could not add to recall storage: %s", error)

    def _note_error(self, message: str) -> None:
        wanted = "tool call" if self._native_llm() is not None else "JSON action"
        self.context.push(
            {
                "role": "system",
                "content": f"[error] {message}. Reply again with one valid {wanted}.",
            }
        )

    def _say_fallback(self, turn: Turn, on_text: Callable[[str], None]) -> None:
        self._say(FALLBACK_MESSAGE, turn, on_text)

    def _say(
        self, message: str, turn: Turn, on_text: Callable[[str], None], ahead: str = ""
    ) -> None:
        """Tell the user ``message`` as written here, not by the model (after ``ahead``, already
        shown: one message with it)."""
        said = f"{ahead} {message}" if ahead else message
        on_text(said[len(ahead) :])
        self._keep_said(said, turn)

    def _keep_said(self, message: str, turn: Turn) -> None:
        """Record ``message``, already shown, as said this turn."""
        self._run(Action("send_message", SendMessage(message=message), False), turn)

    def _acknowledges(self, only: str | None, event: Event) -> bool:
        """Whether the user's request is routed to a tool that speaks for itself."""
        return from_user(event) and self._speaks_for_itself(only)

    def _speaks_for_itself(self, tool: str | None) -> bool:
        return tool is not None and tool in self.tools and self.tools[tool].speaks_result

    @staticmethod
    def _acknowledge(turn: Turn, on_text: Callable[[str], None]) -> None:
        """A word said at once for a request a tool that speaks for itself will answer: the
        model writes the tool's whole JSON action before its confirmation can be said (1.5 s
        on the 0.5B model, 2.5-3.5 s on the 1.5B: docs/BENCHMARKS.md, voice). Said before the
        step for a request routed to the tool, or as soon as the step names it."""
        on_text(ACKNOWLEDGED)
        turn.ahead = ACKNOWLEDGED

    def _interrupted(self, delivered: str, turn: Turn) -> None:
        turn.interrupted = True
        if delivered:
            kept = delivered + INTERRUPTED
            self.context.push(
                {
                    "role": "assistant",
                    "content": Action("send_message", SendMessage(message=kept), False).as_json(),
                }
            )
            self._recall("assistant", kept)
            turn.reply = f"{turn.reply}\n{kept}".strip()

    def note(self, event: Event) -> None:
        """Tell the agent something it should know at its next turn, with no reply now (the
        user changed a memory on screen): into the window and recall storage."""
        prompt = event.prompt()
        with self._window:
            self.context.push({"role": "system", "content": prompt})
        self._recall("system", prompt)

    def heard_only(self, heard: str) -> None:
        """The last reply was spoken and the user cut in: only ``heard`` reached their ears.

        The history gets a note of what was heard, so the model does not assume the user knows
        the rest (the reply itself stays as it was sent: the prompt only grows); the memory
        stream's record of each message not heard whole is edited to what was (its change
        history keeps the full text); recall storage keeps the reply as written and the note.
        """
        left = heard.split()
        for message, record_id in self._said:
            # Counted in words: what was heard is the speakable form (markup read out).
            count = len(message.split())
            kept, left = " ".join(left[:count]), left[count:]
            if len(kept.split()) == count or record_id is None:
                continue
            text = kept + INTERRUPTED if kept else "(interrupted before it was heard)"
            try:
                self.stores.stream.edit(record_id, text=f"Brain OS: {text}")
            except (ValueError, MemoryRequestError, OSError) as error:
                log.warning("could not mark the interrupted reply in memory: %s", error)
        if heard.strip():
            note = f"[the user interrupted the spoken reply; they heard only: {heard!r}]"
        else:
            note = "[the user interrupted the spoken reply before hearing any of it]"
        with self._window:
            self.context.push({"role": "system", "content": note})
        self._recall("system", note)

    def _failed(self, turn: Turn, message: str) -> None:
        log.warning("LLM failed: %s", message)
        turn.error = message
        return None

    def _wait(self, seconds: float, cancel: threading.Event) -> None:
        if self._sleep is not None:
            self._sleep(seconds)
        else:
            cancel.wait(seconds)
