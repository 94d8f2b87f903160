"""What one step asks the model for: the form its reply is held to (``ReplyForm``), and the
request that holds it there, by the action schema or the tools offered (``StepRequests``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from assistant.agent.naming import named_in_news, saying
from assistant.agent.refusal import WILLING_OPENINGS, WILLING_PATTERN
from assistant.agent.routing import asks_about_their_life, first_tool
from assistant.agent.speculation import Request
from assistant.agent.tools import (
    COMPOSED_PATTERN,
    UNKNOWN_PATTERN,
    Tool,
    action_schema,
    by_name,
    native_tools,
)
from assistant.llm.messages import JsonSchema, Message, StreamDelta, TextDelta
from assistant.llm.protocols import AgentLLM, ToolCallingLLM

# How to send a step's request: its reply as it streams.
Ask = Callable[[], Iterator[StreamDelta]]


@dataclass(frozen=True)
class ReplyForm:
    """What one step's reply is held to."""

    # The one tool the step may call (what routing.py chose, or send_message to answer).
    only: str | None = None
    # A message grounded in what is known: it says first whether the answer is (a question
    # about the user's life).
    grounded: bool = False
    # A message that opens willingly (asked again after one that opened by refusing).
    willing: bool = False
    # A message that says it does not know (asked again after an answer that made up what it
    # was not told).
    admitting: bool = False
    # The person the message must name (naming.py).
    naming: str | None = None
    # A heartbeat's step: held to a message when there is something to tell the user and
    # they may be spoken to (``speak``, with ``only`` send_message), else to the heartbeat's
    # own tools.
    tick: bool = False
    speak: bool = False
    # A pattern the message is held to (what a heartbeat's message opens with).
    opening: str | None = None
    # Said to the model just before the message it answers, for this step only (what to leave
    # out of a meal asked for again: diet.py).
    note: str | None = None


def form_for(text: str, tools: Mapping[str, Tool]) -> ReplyForm:
    """The form of the first step answering the user's ``text``: held to the tool the request
    needs (routing.py), if any; else grounded, for a question about their life, and saying
    the person their news is about. A request routed to a tool is not a question to answer
    from memory, and a message answering it names no one (a poem about Ana keeps the poem's
    pattern)."""
    only = first_tool(text, tools)
    if only is not None:
        return ReplyForm(only)
    return ReplyForm(grounded=asks_about_their_life(text), naming=named_in_news(text))


class StepRequests:
    """The requests a step may send: the tools as a schema-held JSON action, or offered as
    native tool calls, narrowed as the step's form asks."""

    def __init__(
        self,
        llm: AgentLLM,
        tools: Sequence[Tool],
        max_tokens: int,
        temperature: float,
        design: str = "json_action",
    ) -> None:
        self.llm = llm
        # "plain": a message is asked for as plain text, with no tool offered (docs/REPLIES.md).
        self.design = design
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.tools = by_name(tools)
        turn_tools = [tool for tool in tools if not tool.tick_only]
        self.turn_tools = turn_tools
        self.schema = action_schema(turn_tools)
        self.native_tools = native_tools(turn_tools)
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
        # A heartbeat's choices when it has nothing to tell: its own tools, a background task
        # among them (an agent with no heartbeat tools is offered every tool).
        quiet = [t for t in tools if t.tick_only]
        self.quiet_tick = (action_schema(quiet), native_tools(quiet))
        self.messages_only = messages_only
        self.has_tick_tools = any(t.tick_only for t in tools)

    def native(self) -> ToolCallingLLM | None:
        """The LLM when the tools go to it as native tool calls (asked anew each step)."""
        llm = self.llm
        return llm if isinstance(llm, ToolCallingLLM) and llm.tool_calling == "native" else None

    def plain(self, form: ReplyForm, native: ToolCallingLLM | None) -> bool:
        """Whether the step's reply is asked for as plain text: in the plain design, a step
        that can only talk (no tool routed to, not a heartbeat's quiet choice)."""
        quiet_tick = form.tick and not form.speak and self.has_tick_tools
        return (
            self.design == "plain"
            and native is None
            and form.only in (None, "send_message")
            and not quiet_tick
        )

    def request(
        self, messages: list[Message], native: ToolCallingLLM | None, form: ReplyForm
    ) -> tuple[Request, Ask]:
        """A step's request, comparable, and how to send it: with the tools offered natively,
        or (no ``native``) held to the action schema, its text as content."""
        max_tokens = self.max_tokens
        temperature = self.temperature
        if form.note:
            messages = _noted(messages, form.note)
        if self.plain(form, native):
            return self._plain_request(messages, form)
        only = form.only
        schema, tools = self.schema, self.native_tools
        if only is not None and only in self.narrowed:
            schema, tools = self.narrowed[only]
        if only == "send_message":
            schema = self.composing
        if form.grounded and only in (None, "send_message"):
            # Answered at once: retrieval has just searched the memory with the question
            # itself, and offered the tools as well the 1.5B model searched again for 5 of 12
            # questions (a step of 2-4 s) and then said it did not know what three hours are
            # in minutes.
            schema = self.grounded
        if form.tick and not form.speak and self.has_tick_tools:
            schema, tools = self.quiet_tick
        if form.opening is not None:
            schema = action_schema(self.messages_only, opening=form.opening)
        if form.willing:
            schema = self.willing
        if form.admitting:
            schema = self.admitting
        elif form.naming is not None and not form.grounded:
            schema = self._naming(form.naming, only, form.willing)
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

    def _plain_request(self, messages: list[Message], form: ReplyForm) -> tuple[Request, Ask]:
        """A message asked for as plain text; asked again after a check, held by a grammar to
        open as the check wants (a willing word, or "I don't know"), as the JSON designs' are
        by their schema: told in a note instead, the 0.5B model said the same again, or said
        the note."""
        grammar = _ADMITTING if form.admitting else _WILLING if form.willing else None
        max_tokens, temperature = self.max_tokens, self.temperature

        def text() -> Iterator[StreamDelta]:
            for chunk in self.llm.stream(
                messages, max_tokens=max_tokens, temperature=temperature, grammar=grammar
            ):
                yield TextDelta(chunk)

        options = {"max_tokens": max_tokens, "temperature": temperature, "grammar": grammar}
        return Request.of(messages, **options), text

    def _naming(self, name: str, only: str | None, willing: bool) -> JsonSchema:
        """The action schema of a step whose message says ``name`` (held to open willingly
        as well, or to the tool ``only``, as the step is)."""
        tools: list[Tool]
        if willing or only == "send_message":
            tools = [self.tools["send_message"]]
        else:
            tools = [self.tools[only]] if only in self.tools else self.turn_tools
        return action_schema(tools, opening=saying(name, WILLING_PATTERN if willing else None))


# A plain reply asked again after a check (step.py) opens so: willingly, after one that opened
# by refusing, with undue sympathy, as an earlier reply or with the user's own words; with "I
# don't know", after one that said what it was not told.
def _gbnf_opening(*openings: str) -> str:
    words = " | ".join(f'"{opening}"' for opening in openings)
    return f"root ::= ({words}) rest\nrest ::= [^\\x00]*\n"


# Not those a copied reply itself opens with ("You're welcome!", "Hello, ..."): the re-ask of a
# copy said it again.
_WILLING = _gbnf_opening(
    *(word for word in WILLING_OPENINGS if word not in ("You", "Your", "Hello", "Hi", "Thanks"))
)
_ADMITTING = _gbnf_opening("I don't know")


def _noted(messages: list[Message], note: str) -> list[Message]:
    """``messages`` with ``note`` said just before the last (the one the reply answers)."""
    *before, last = messages
    return [*before, {"role": "system", "content": note}, last]
