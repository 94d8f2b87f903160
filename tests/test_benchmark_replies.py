"""The benchmarks' checks for a reply that only repeats the user's words, or an earlier
reply."""

from benchmarks.replies import copied_share, repeated_share, repeats


def test_a_reply_that_copies_the_user_repeats_them() -> None:
    said = "What time is it in Tokyo right now?"
    assert repeats(said, "What time is it in Tokyo right now?")
    assert repeats(said, "What time is it in Tokyo now? Let me check.")
    assert repeats("My sister Beatrix lives in Porto.", "My sister Beatrix lives in Portal.")


def test_an_answer_or_a_rephrased_acknowledgement_does_not() -> None:
    assert not repeats("What time is it in Tokyo right now?", "It is 14:15 in Tokyo.")
    assert not repeats(
        "Remind me to water the plants this evening.",
        "I will remind you to water the plants this evening.",
    )
    assert not repeats("", "Hello!")


def test_the_share_counts_the_pairs() -> None:
    pairs = [
        ("Tell me a joke.", "Tell me a joke."),
        ("Tell me a joke.", "Why did the tomato blush?"),
    ]
    assert repeated_share(pairs) == "1/2"


def test_a_reply_opening_as_an_earlier_one_is_counted_once_it_is_long_enough() -> None:
    replies = [
        "I'm so happy! A new job, how exciting.",
        "Okay.",
        "Okay.",
        "I'm so happy!  A new job, how exciting. Water them weekly.",
        "I'm so happy! What a lovely name.",
    ]
    assert copied_share(replies) == "1/5"
