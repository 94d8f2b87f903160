"""Counting tokens against a context window: exactly, with the local model's own vocabulary, or
by a high estimate where the endpoint's tokenizer is not at hand (a remote endpoint)."""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from assistant.llm.protocols import CountsTokens

log = logging.getLogger(__name__)

TokenCounter = Callable[[str], int]

# Tokenizing runs at about 1 µs a character here; a text longer than this is estimated instead
# (the estimate errs high, so the window is still not overrun).
EXACT_MAX_CHARS = 64_000
# Messages counted again and again while they stay in the window.
CACHED_TEXTS = 4_096


def estimate_tokens(text: str) -> int:
    """A deliberately high estimate: about 3 bytes of UTF-8 a token (English runs near 4
    characters a token on the bundled models' tokenizers), so the window is not overrun."""
    return len(text.encode("utf-8", "replace")) // 3 + 1


def counter_of(llm: object) -> TokenCounter:
    """``llm``'s own way of counting tokens, if it has one; else the estimate."""
    return llm.count_tokens if isinstance(llm, CountsTokens) else estimate_tokens


class VocabularyCounter:
    """Exact token counts with a GGUF model's vocabulary. llama.cpp reads only the
    vocabulary (0.2-0.3 s, no weights) and counts without keeping the tokens."""

    def __init__(self, gguf: Path) -> None:
        import llama_cpp
        from llama_cpp._logger import set_verbose

        set_verbose(False)  # the loader's per-token notes would fill the service log
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        model = llama_cpp.llama_model_load_from_file(os.fsencode(gguf), params)
        if not model:
            raise ValueError(f"cannot read the vocabulary of {gguf}")
        self._vocab = llama_cpp.llama_model_get_vocab(model)
        self._tokenize = llama_cpp.llama_tokenize
        weakref.finalize(self, llama_cpp.llama_model_free, model)
        self._count: Callable[[str], int] = lru_cache(maxsize=CACHED_TEXTS)(self._exact)

    def __call__(self, text: str) -> int:
        if len(text) > EXACT_MAX_CHARS:
            return estimate_tokens(text)
        return self._count(text)

    def _exact(self, text: str) -> int:
        data = text.encode("utf-8", "replace")
        # With no room for the tokens, llama_tokenize answers minus the number it needs.
        # Special tokens written out ("<|im_end|>") are read as the server reads the prompt.
        needed = int(self._tokenize(self._vocab, data, len(data), None, 0, False, True))
        return -needed if needed < 0 else needed


def vocabulary_counter(gguf: Path) -> TokenCounter:
    """The exact counter for ``gguf``, or the estimate (logged) if its vocabulary cannot be
    read: counting must never stop the agent."""
    try:
        return VocabularyCounter(gguf)
    except Exception as error:
        log.warning("counting tokens by estimate: %s", error)
        return estimate_tokens
