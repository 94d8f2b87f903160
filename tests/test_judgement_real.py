"""A handful of the reply probes (benchmarks/judgement_probes.py) through the app's own agent,
stores and tools (``AgentHost``) with the real local model (fast profile): the rules the
benchmark applies to 54 of them hold here for these, on every run."""

from __future__ import annotations

from pathlib import Path

import pytest

from assistant.llm.client import LLMClient
from assistant.settings import Settings
from benchmarks.judgement import answer
from benchmarks.judgement_probes import REPLY_PROBES, judge
from memory.embedder import OnnxSentenceEmbedder

pytestmark = pytest.mark.slow

# One of each kind the fast model gets right run after run (the benchmark counts the rest).
PROBES = {probe.name: probe for probe in REPLY_PROBES}
CHOSEN = ("ana job", "capital", "promotion", "dentist call", "thanks")


@pytest.mark.parametrize("name", CHOSEN)
def test_the_reply_is_one_a_person_would_give(
    name: str,
    fast_settings: Settings,
    fast_llm: LLMClient,
    embedder: OnnxSentenceEmbedder,
    tmp_path: Path,
) -> None:
    probe = PROBES[name]
    reply = answer(probe, fast_settings, tmp_path / "data", fast_llm, embedder)
    assert judge(probe, reply) == [], reply
