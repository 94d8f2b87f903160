"""The user's own words said back are turned to speak to them (assistant/agent/checks/echo.py)."""

from __future__ import annotations

import pytest

from assistant.agent.checks.check import Verdict
from assistant.agent.checks.echo import EchoTurn
from assistant.agent.checks.runs import remembered_user_words
from assistant.agent.events import UserText
from assistant.agent.tools import Stores
from assistant.llm.messages import Message
from tests.agent_helpers import ScriptedStream, say
from tests.test_agent import make_agent


def turned(heard: str, reply: str, chunk: int, earlier: tuple[str, ...] = ()) -> str:
    echo = EchoTurn(heard, earlier)
    out = "".join(echo.feed(reply[i : i + chunk]) for i in range(0, len(reply), chunk))
    return out + echo.flush()


@pytest.mark.parametrize(
    ("heard", "reply", "shown"),
    [
        (
            "I adopted a greyhound and I'm walking her twice a day.",
            "I'm glad to hear that you adopted a greyhound and I'm walking her twice a day.",
            "I'm glad to hear that you adopted a greyhound and you're walking her twice a day.",
        ),
        (
            "My cousin Ivo plays the tuba in my band.",
            "Great, my cousin Ivo plays the tuba in my band!",
            "Great, your cousin Ivo plays the tuba in your band!",
        ),
        (
            "I am a beekeeper near Kuopio.",
            "Hello! I am a beekeeper near Kuopio.",
            "Hello! You are a beekeeper near Kuopio.",
        ),
        (
            "I planted forty tulips today, my record so far.",
            "Wow, you planted forty tulips today, my record so far.",
            "Wow, you planted forty tulips today, your record so far.",
        ),
        # "I'm" and "I'll" are one word to compare: the model changes the tense it echoes.
        (
            "I sold the boat and I'm buying a caravan in June.",
            "Nice! You sold the boat and I'll be buying a caravan in June.",
            "Nice! You sold the boat and you'll be buying a caravan in June.",
        ),
        # The assistant in its own voice, where the user said the same words: left as it is.
        (
            "I'm glad you remembered my birthday.",
            "I'm glad you liked it. I am a beekeeper.",
            "I'm glad you liked it. I am a beekeeper.",
        ),
        ("Tell me a riddle.", "Sure, let me tell you a riddle.", "Sure, let me tell you a riddle."),
        ("", "I am fine, thanks.", "I am fine, thanks."),
    ],
)
@pytest.mark.parametrize("chunk", [1, 4, 200])
def test_the_users_first_person_words_are_turned_as_they_stream(
    heard: str, reply: str, shown: str, chunk: int
) -> None:
    assert turned(heard, reply, chunk) == shown


def test_it_holds_a_first_person_word_only_until_its_run_is_written() -> None:
    echo = EchoTurn("My aunt breeds goats.")
    assert echo.feed("Oh, my") == "Oh, "
    assert echo.feed(" aunt breeds ") == "your aunt breeds "
    assert echo.feed("goats.") + echo.flush() == "goats."
    assert echo.verdict is Verdict.TRIM


def test_a_user_who_said_nothing_in_the_first_person_leaves_it_unarmed() -> None:
    echo = EchoTurn("The ferry leaves at noon.")
    assert not echo.armed
    assert echo.feed("My ferry") == "My ferry" and echo.verdict is Verdict.PASS


def test_the_agent_shows_and_keeps_the_turned_words(stores: Stores) -> None:
    llm = ScriptedStream(say("Great, I'm a luthier in Ghent now."), say("Nice."))
    agent = make_agent(llm, stores)
    turn = agent.respond(UserText("Since May I'm a luthier in Ghent."))
    assert turn.reply == "Great, you're a luthier in Ghent now."
    agent.respond(UserText("Thanks."))
    kept = [m["content"] for m in llm.calls[1]]
    assert any("you're a luthier in Ghent now" in content for content in kept)


@pytest.mark.parametrize(
    ("heard", "earlier", "reply", "shown"),
    [
        # Said turns before, four words in a row: the user's too; and the "you" of their
        # words in a sentence that turned their "I" is the assistant.
        (
            "Say back what I told you about my cousin.",
            ("My cousin Ottilie farms geese near Lund.",),
            "I told you that my cousin Ottilie farms geese near Lund.",
            "You told me that your cousin Ottilie farms geese near Lund.",
        ),
        # Three words the assistant says of itself as well: not the user's from turns before.
        (
            "Thanks!",
            ("I'm going to the orchard later.",),
            "I'm going to set that reminder now.",
            "I'm going to set that reminder now.",
        ),
        # A "you" in a sentence where nothing of the user's was turned stays.
        (
            "Thanks!",
            ("I hope you can help me plan a kayak trip.",),
            "I hope you enjoy the trip.",
            "I hope you enjoy the trip.",
        ),
    ],
)
@pytest.mark.parametrize("chunk", [1, 5, 200])
def test_words_said_turns_before_are_turned_too(
    heard: str, earlier: tuple[str, ...], reply: str, shown: str, chunk: int
) -> None:
    assert turned(heard, reply, chunk, earlier) == shown


def test_the_users_words_from_a_memory_shown_are_theirs_too(stores: Stores) -> None:
    """A memory of the user's words, said back as the assistant's own, is turned as their
    words in the window are (the window of a new session holds none of them)."""
    stores.stream.add("User: I'm repainting the canal boat before the spring rally.", source="user")
    llm = ScriptedStream(
        say("Noted. I'm repainting the canal boat before the spring rally."), say("Nice.")
    )
    agent = make_agent(llm, stores)
    turn = agent.respond(UserText("What colour should the canal boat be?"))
    shown = [m["content"] for m in llm.calls[0] if m["role"] == "system"]
    assert any("User: I'm repainting the canal boat" in content for content in shown)
    assert turn.reply == "Noted. You're repainting the canal boat before the spring rally."


def test_remembered_user_words_are_the_memory_lines_of_the_user() -> None:
    messages: list[Message] = [
        {
            "role": "system",
            "content": "Memories:\n- (2026-03-02) User: I keep ferrets.\n"
            "- (2026-03-02) Brain OS: Ferrets are lively.\n- Rosa owns the bakery",
        },
        {"role": "user", "content": "User: not a memory line"},
    ]
    assert remembered_user_words(messages) == ("I keep ferrets.",)
