"""The importance scale: small talk by rule (no model, no anchors), the rest by the app's anchors
on the real embedder."""

from __future__ import annotations

import numpy as np
import pytest

from assistant.agent.importance_anchors import ANCHORS
from memory.embedder import OnnxSentenceEmbedder
from memory.importance import ImportanceScale, small_talk


@pytest.mark.parametrize(
    "text",
    [
        "User: Good morning!",
        "User: ok, thanks",
        "User: lol that's funny",
        "User: Thanks, that's all for now.",
        "User: Thanks, Aya!",
        "Brain OS: Hello! How can I help you today?",
        "Brain OS: You\u2019re welcome! Let me know if there's anything else.",
        "Brain OS: Sure, I can help with that.",
        "Brain OS: Hello Malin! How can I assist you today?",
    ],
)
def test_small_talk_is_known_by_rule(text: str) -> None:
    assert small_talk(text)


@pytest.mark.parametrize(
    "text",
    [
        "User: Good morning! My mother is in hospital.",
        "User: ok, the surgery is on Monday",
        "User: I'm allergic to wasp stings.",
        "Brain OS: Sure, I've set a reminder to call the doctor tomorrow at 9.",
        "User: Thanks, Aya and Lars are coming to dinner on Sunday",
        "User: Hi, I'm Sid.",
        "User: hello, my name is Aya",
        "User: ",
    ],
)
def test_anything_with_content_is_not_small_talk(text: str) -> None:
    assert not small_talk(text) or not text.removeprefix("User: ").strip()


class Unused:
    """An embedder that must not be asked: small talk is rated without one."""

    dimensions = 3

    def embed(self, texts: object) -> np.ndarray:
        raise AssertionError("small talk was sent to the embedder")


def test_small_talk_is_rated_one_without_the_embedder() -> None:
    scale = ImportanceScale(Unused(), {5: ("anything",)})  # type: ignore[arg-type]
    assert scale.rate("Brain OS: Happy to help!", np.zeros(3, np.float32)) == 1


def test_anchors_must_be_ratings_one_to_ten(embedder: OnnxSentenceEmbedder) -> None:
    with pytest.raises(ValueError):
        ImportanceScale(embedder, {11: ("x",)})
    with pytest.raises(ValueError):
        ImportanceScale(embedder, {})


@pytest.mark.parametrize(
    ("text", "low", "high"),
    [
        ("User: I had cereal for breakfast.", 1, 3),
        ("User: It's cloudy this afternoon.", 1, 3),
        # A taste or an errand: the middle of the scale (the nearest anchors of the first
        # are a taste, 4, and a meal of the moment, 2: it gets 3).
        ("User: My favourite food is sushi.", 3, 6),
        ("User: I need to pick up batteries.", 3, 6),
        ("User: I'm allergic to penicillin.", 7, 10),
        ("User: My father was diagnosed with cancer.", 7, 10),
        ("User: We're getting married in the summer.", 8, 10),
        ("User: My passport expires in March.", 6, 9),
    ],
)
def test_the_app_anchors_rate_like_a_careful_person(
    embedder: OnnxSentenceEmbedder, text: str, low: int, high: int
) -> None:
    scale = ImportanceScale(embedder, ANCHORS)
    assert low <= scale.rate(text, embedder.embed([text])[0]) <= high


def test_the_scale_has_a_version_of_its_anchors(embedder: OnnxSentenceEmbedder) -> None:
    first = ImportanceScale(embedder, {1: ("a",), 9: ("b",)})
    assert first.version == ImportanceScale(embedder, {1: ("a",), 9: ("b",)}).version
    assert first.version != ImportanceScale(embedder, {1: ("a",), 8: ("b",)}).version
