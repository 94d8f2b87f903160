"""A memory's text as shown with a message: whole when short, else its sentences that bear
on the message (assistant/agent/focus.py)."""

from __future__ import annotations

from assistant.agent.focus import FOCUS_CHARS, focused

LONG = (
    "Odile: Oh hi Bastien, lovely to hear from you! The weather has been grey all week. "
    "We finally finished the boat shed by the canal last Sunday. "
    "My knee still hurts from the ladder though."
)


def test_a_short_memory_is_shown_whole() -> None:
    assert focused("User: I keep bees on the roof.", "bees") == "User: I keep bees on the roof."


def test_a_long_one_keeps_the_sentence_the_message_asks_about_and_its_speaker() -> None:
    shown = focused(LONG, "When did Odile finish the boat shed?")
    assert shown.startswith("Odile: ") and "finished the boat shed by the canal" in shown
    assert "knee" not in shown and "…" not in shown
    assert len(shown) <= FOCUS_CHARS + len("Odile: ") + 4


def test_with_no_word_in_common_its_first_sentences_are_shown() -> None:
    shown = focused(LONG, "Good morning!")
    assert shown.startswith("Odile: Oh hi Bastien") and "knee" not in shown


def test_one_long_sentence_is_cut_at_a_word() -> None:
    shown = focused("Ziggy: " + "very " * 60 + "long.", "long")
    assert shown.endswith("very…") and len(shown) <= FOCUS_CHARS + 1
