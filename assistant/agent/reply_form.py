"""What one step's reply is held to: the tool it may call, the opening the request holds it
to, and what the checks of an earlier try of the same step asked to change."""

from __future__ import annotations

from dataclasses import dataclass

from assistant.agent.tone import Tone


@dataclass(frozen=True)
class ReplyForm:
    """What one step's reply is held to."""

    # The one tool the step may call (what routing.py chose, or send_message to answer).
    only: str | None = None
    # A message grounded in what is known: it says first whether the answer is (a question
    # about the user's life).
    grounded: bool = False
    # A message that opens willingly (asked again after one that opened by refusing), in the
    # tone of what the user said.
    willing: bool = False
    tone: Tone = Tone.PLAIN
    # Openings the message may not have (lower case): an earlier reply's, or the user's words,
    # that the try before copied. The re-ask opens with none of their first words, and runs of
    # words already in the prompt are made unlikely (the DRY sampler, where the server has it).
    avoiding: tuple[str, ...] = ()
    # A message that says it does not know (asked again after an answer that made up what it
    # was not told).
    admitting: bool = False
    # A message that says what the user told of it (asked again after an answer that made up
    # what it was not told, where the user's own words hold the answer).
    recalling: bool = False
    # The person the message must name (naming.py).
    naming: str | None = None
    # A heartbeat's step: held to a message when there is something to tell the user and
    # they may be spoken to (``speak``, with ``only`` send_message), else to the heartbeat's
    # own tools.
    tick: bool = False
    speak: bool = False
    # A pattern the message is held to (what a heartbeat's message opens with). It outranks
    # ``willing``: its words are fixed, and none of them refuses.
    opening: str | None = None
    # A food the user does not eat that an earlier try of this reply named (checks/diet.py):
    # the model is told to leave it out, and a sentence that still names it is dropped.
    leaving_out: str | None = None
