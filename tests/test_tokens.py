"""Counting tokens for the context window: the local model's own vocabulary, against what its
real server counts; the estimate for other endpoints; the agent wired to whichever is in use."""

from __future__ import annotations

import logging
from pathlib import Path

import openai
import pytest

from assistant.agent.context import ContextConfig, ContextWindow
from assistant.agent.core_memory import CoreMemory
from assistant.agent.wiring import open_agent, open_stores
from assistant.llm.client import Endpoint, LLMClient
from assistant.llm.priority import BackgroundLLM, ForegroundGate
from assistant.llm.switch import SwitchableLLM
from assistant.llm.tokens import (
    EXACT_MAX_CHARS,
    VocabularyCounter,
    counter_of,
    estimate_tokens,
    vocabulary_counter,
)
from assistant.model_paths import ProfileModels
from assistant.settings import Settings
from memory.embedder import OnnxSentenceEmbedder

TEXTS = (
    "Hello there, Eve!",
    "My sister Eve lives in Vienna and teaches piano on Tuesdays.",
    "café 😀 naïve — 日本語",
    "caf\udcff",  # an undecodable byte, as the memory keeps it
    "  spaces\n\nand lines\t",
    "<|im_end|> written out",
    "",
)


@pytest.mark.slow
def test_the_local_model_is_counted_as_its_server_counts(fast_llm: LLMClient) -> None:
    server = openai.OpenAI(base_url=fast_llm.endpoint.base_url, api_key="local")
    for text in TEXTS[:-1]:  # the server refuses an empty prompt
        sent = text.encode("utf-8", "replace").decode("utf-8")
        usage = server.completions.create(
            model=fast_llm.endpoint.model, prompt=sent, max_tokens=1, temperature=0.0
        ).usage
        assert usage is not None
        assert fast_llm.count_tokens(text) == usage.prompt_tokens, text
    assert fast_llm.count_tokens("") == 0
    # The estimate errs high on English, which is why it is not used where the truth is known.
    sentence = TEXTS[1]
    assert fast_llm.count_tokens(sentence) < estimate_tokens(sentence)


def test_other_endpoints_and_a_huge_text_are_estimated(fast_settings: Settings) -> None:
    remote = LLMClient(Endpoint("http://127.0.0.1:9/v1", "gpt-4o-mini", is_local=False))
    assert remote.count_tokens is estimate_tokens
    counter = VocabularyCounter(ProfileModels(fast_settings).llm().gguf)
    huge = "word " * (EXACT_MAX_CHARS // 5 + 1)
    assert counter(huge) == estimate_tokens(huge)
    assert counter(" ".join(["word"] * 100)) == 100  # "word", then " word" 99 times


def test_an_unreadable_vocabulary_falls_back_to_the_estimate(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + bytes(512))
    with caplog.at_level(logging.WARNING):
        assert vocabulary_counter(broken) is estimate_tokens
        assert vocabulary_counter(tmp_path / "missing.gguf") is estimate_tokens
    assert "counting tokens by estimate" in caplog.text


@pytest.mark.slow
def test_the_agent_counts_with_the_endpoint_in_use(
    tmp_path: Path, fast_llm: LLMClient, embedder: OnnxSentenceEmbedder, fast_settings: Settings
) -> None:
    switch = SwitchableLLM()
    stores = open_stores(tmp_path, embedder, rate=False, core_memory_chars=2_000)
    try:
        agent = open_agent(fast_settings, switch, stores)
        window = agent.context
        window.push({"role": "user", "content": TEXTS[1] * 20})
        estimated = window.tokens()  # no endpoint yet
        switch.use(fast_llm)
        exact = window.tokens()
        assert exact < estimated
        remote = LLMClient(Endpoint("http://127.0.0.1:9/v1", "m", is_local=False))
        switch.use(remote)  # an endpoint change in the config takes effect at once
        assert window.tokens() == estimated
    finally:
        stores.stream.close()
    # Background work (a sub-agent's cost) counts through the gate's wrapper the same way.
    assert BackgroundLLM(fast_llm, ForegroundGate()).count_tokens(
        TEXTS[1]
    ) == fast_llm.count_tokens(TEXTS[1])
    assert counter_of(object()) is estimate_tokens


def test_an_exact_count_fills_the_window_later_than_the_estimate(
    tmp_path: Path, fast_settings: Settings
) -> None:
    counter = VocabularyCounter(ProfileModels(fast_settings).llm().gguf)
    core = CoreMemory(tmp_path / "core.json", limit=2_000)
    config = ContextConfig(window_tokens=2_048, reply_tokens=256)
    exact = ContextWindow("You are Brain OS.", core, config, count=counter)
    estimated = ContextWindow("You are Brain OS.", core, config)
    for turn in range(200):
        message = {"role": "user", "content": f"Turn {turn}: {TEXTS[1]}"}
        exact.push(dict(message))  # type: ignore[arg-type]
        estimated.push(dict(message))  # type: ignore[arg-type]
        if estimated.pressure() >= 1.0:
            break
    # Where the estimate calls the window full, the model's own count leaves room.
    assert estimated.pressure() >= 1.0
    assert exact.pressure() < 0.85
