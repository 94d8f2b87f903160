"""A handful of the reply probes (benchmarks/judgement_probes.py) through the app's own agent,
stores and tools (``open_session``) with the real local model (fast profile) at temperature 0:
the rules the benchmark applies to 54 of them hold here for the model's most likely reply to
these. Sampled as the app samples (0.3), a reply differs from run to run (the fast model
answered "What does Ana do for a living?" with "I don't know" once in six); the benchmark
counts how often the sampled replies pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.llm.client import LLMClient
from assistant.settings import Settings
from benchmarks.judgement import answer
from benchmarks.judgement_probes import REPLY_PROBES, judge
from memory.embedder import OnnxSentenceEmbedder

pytestmark = pytest.mark.slow

PROBES = {probe.name: probe for probe in REPLY_PROBES}
# The probes no longer choose the design (the conversation benchmark does, docs/BENCHMARKS.md):
# in the plain design no grammar holds the reply to congratulate or to say a person's name,
# and the 0.5B model's most likely reply to good news or to news of someone does neither.
CHOSEN = ("ana job", "capital", "dentist call", "thanks")


@pytest.fixture(scope="module")
def greedy_settings(fast_settings: Settings) -> Settings:
    return fast_settings.model_copy(
        update={"agent": fast_settings.agent.model_copy(update={"temperature": 0.0})}
    )


@pytest.mark.parametrize("name", CHOSEN)
def test_the_reply_is_one_a_person_would_give(
    name: str,
    greedy_settings: Settings,
    fast_llm: LLMClient,
    embedder: OnnxSentenceEmbedder,
    tmp_path: Path,
) -> None:
    probe = PROBES[name]
    reply = answer(probe, greedy_settings, tmp_path / "data", fast_llm, embedder)
    assert judge(probe, reply) == [], reply


def test_a_poem_keeps_its_lines(
    greedy_settings: Settings,
    fast_llm: LLMClient,
    embedder: OnnxSentenceEmbedder,
    tmp_path: Path,
) -> None:
    """Held to a plain JSON string, a haiku ended after its first line (the model closed the
    string where it wanted a line break); held to the composed pattern, its lines break."""
    reply = answer(PROBES["haiku"], greedy_settings, tmp_path / "data", fast_llm, embedder)
    assert len(reply.text.splitlines()) >= 2, reply
