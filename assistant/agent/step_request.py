"""What one step asks the model for: the form of its first try (``form_for``), and the request
that holds a try to its form, by the action schema, the tools offered or a grammar
(``StepRequests``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from assistant.agent.checks.diet import LEAVE_OUT
from assistant.agent.checks.opening import INTERJECTIONS, willing_openings, willing_pattern
from assistant.agent.naming import named_in_news, saying
from assistant.agent.reply_form import ReplyForm
from assistant.agent.routing import asks_about_their_life, first_tool
from assistant.agent.speculation import Request
from assistant.agent.told import RECALLED
from assistant.agent.tone import tone_of
from assistant.agent.tools import (
    COMPOSED_PATTERN,
    RECALLING_PATTERN,
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
# The DRY sampler's strength for a reply asked again after it copied an earlier one or the
# user's words: the same prompt, with only the first word held, wrote the same copy again.
COPY_NO_REPEAT = 0.8


def form_for(text: str, tools: Mapping[str, Tool]) -> ReplyForm:
    """The form of the first step answering the user's ``text``: held to the tool the request
    needs (routing.py), if any; else grounded, for a question about their life, and saying
    the person their news is about. A request routed to a tool is not a question to answer
    from memory, and a message answering it names no one (a poem about a friend keeps the poem's
    pattern)."""
    only = first_tool(text, tools)
    if only is not None:
        return ReplyForm(only, tone=tone_of(text))
    return ReplyForm(
        grounded=asks_about_their_life(text), naming=named_in_news(text), tone=tone_of(text)
    )


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
        # A message asked for at once (routing.py): a poem's lines may break.
        self.composing = action_schema(messages_only, opening=COMPOSED_PATTERN)
        # The answer asked for after one that made up what it was not told (grounding.py):
        # saying what the user told of it, where their words hold the answer, else admitting
        # it does not know.
        self.recalling = action_schema(messages_only, opening=RECALLING_PATTERN)
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
        that can only talk (no tool routed to, not a heartbeat's quiet choice) and is held to
        no fixed opening (a heartbeat's message keeps its schema, which holds the opening)."""
        quiet_tick = form.tick and not form.speak and self.has_tick_tools
        return (
            self.design == "plain"
            and native is None
            and form.only in (None, "send_message")
            and form.opening is None
            and not quiet_tick
        )

    def request(
        self, messages: list[Message], native: ToolCallingLLM | None, form: ReplyForm
    ) -> tuple[Request, Ask]:
        """A step's request, comparable, and how to send it: with the tools offered natively,
        or (no ``native``) held to the action schema, its text as content."""
        max_tokens = self.max_tokens
        temperature = self.temperature
        if form.leaving_out is not None:
            messages = _noted(messages, LEAVE_OUT.format(food=form.leaving_out))
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
        if form.willing:
            schema = action_schema(
                self.messages_only, opening=willing_pattern(form.avoiding, form.tone)
            )
        if form.opening is not None:  # fixed words, none of them a refusal: it outranks willing
            schema = action_schema(self.messages_only, opening=form.opening)
        if form.admitting:
            schema = self.admitting
        elif form.recalling:
            schema = self.recalling
        elif form.naming is not None and not form.grounded:
            schema = self._naming(form.naming, only, form)
        if native is not None:
            request = Request.of(
                messages, tools=tools, max_tokens=max_tokens, temperature=temperature
            )
            return request, lambda: native.stream_tools(
                messages, tools, max_tokens=max_tokens, temperature=temperature
            )
        return self._text_request(messages, form, schema=schema)

    def _plain_request(self, messages: list[Message], form: ReplyForm) -> tuple[Request, Ask]:
        """A message asked for as plain text; asked again after a check, held by a grammar to
        open as the check wants (a willing word, or "I don't know"), as the JSON designs' are
        by their schema: told in a note instead, the 0.5B model said the same again, or said
        the note."""
        grammar = None
        if form.admitting:
            grammar = ADMITTING_GRAMMAR
        elif form.recalling:
            grammar = RECALLING_GRAMMAR
        elif form.willing:
            grammar = opening_grammar(
                *(
                    word
                    for word in willing_openings(form.avoiding, form.tone)
                    if word not in _COPY_OPENERS
                )
            )
        return self._text_request(messages, form, grammar=grammar)

    def _text_request(
        self, messages: list[Message], form: ReplyForm, **held: Any
    ) -> tuple[Request, Ask]:
        """A request whose reply is the content's text, held as ``held`` says (a ``schema``
        or a ``grammar``); after a copy, with runs of words already in the prompt made
        unlikely."""
        options = {"max_tokens": self.max_tokens, "temperature": self.temperature, **held}
        if form.avoiding:
            options["no_repeat"] = COPY_NO_REPEAT

        def text() -> Iterator[StreamDelta]:
            for chunk in self.llm.stream(messages, **options):
                yield TextDelta(chunk)

        return Request.of(messages, **options), text

    def _naming(self, name: str, only: str | None, form: ReplyForm) -> JsonSchema:
        """The action schema of a step whose message says ``name`` (held to open willingly
        as well, or to the tool ``only``, as the step is)."""
        tools: list[Tool]
        willing = form.willing
        if willing or only == "send_message":
            tools = [self.tools["send_message"]]
        else:
            tools = [self.tools[only]] if only in self.tools else self.turn_tools
        opening = willing_pattern(form.avoiding, form.tone) if willing else None
        return action_schema(tools, opening=saying(name, opening))


# A plain reply asked again after a check (step.py) opens so: willingly, after one that opened
# by refusing, with undue sympathy, as an earlier reply or with the user's own words; with "I
# don't know", after one that said what it was not told. The opening is a whole word, a space
# or a mark after it: held only to its letters, the 0.5B model went on inside it ("Oncence,
# I'm going ..."), and held off ASCII letters alone, with a letter beyond them ("Onceğin.").
def opening_grammar(*openings: str) -> str:
    marked = [f'"{opening}"' for opening in openings if opening in INTERJECTIONS]
    words = [f'"{opening}"' for opening in openings if opening not in INTERJECTIONS]
    alternatives = [f"({' | '.join(words)}) rest"] if words else []
    if marked:  # an interjection, said with its mark and words after it (opening.py)
        alternatives.append(f'({" | ".join(marked)}) [,.!] " " [A-Za-z] [^\\x00]*')
    return f"root ::= {' | '.join(alternatives)}\nrest ::= ([ \\n,.!?;:'-] [^\\x00]*)?\n"


# Not those a copied reply itself tends to open with ("You're welcome!", "Hello, ..."): the
# re-ask of a copy said it again.
_COPY_OPENERS = ("You", "Your", "Hello", "Hi", "Thanks")
# An admission goes on to say what it does not know: held to "I don't know" alone, the 0.5B
# model wrote "I don't know." to question after question, one reply word for word (asked
# again as a copy, it wrote it again).
ADMITTING_GRAMMAR = 'root ::= "I don\'t know" ","? " " [a-z] [^\\x00]*\n'
# What the user told of it, in the words that follow: held to "You told me" alone, the 0.5B
# model at times said only that it had been told ("You told me his name as ...").
RECALLING_GRAMMAR = f'root ::= "{RECALLED} " [a-z] [^\\x00]*\n'


def _noted(messages: list[Message], note: str) -> list[Message]:
    """``messages`` with ``note`` said just before the last (the one the reply answers)."""
    *before, last = messages
    return [*before, {"role": "system", "content": note}, last]
