"""Sentence embeddings: a small interface and a torch-free MiniLM on onnxruntime."""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

MAX_TOKENS = 256
# Texts whose vectors are kept: a turn embeds the user's words for retrieval, then again for
# recall storage (and a draft read ahead embeds them before both).
RECENT_VECTORS = 64


class Embedder(Protocol):
    dimensions: int

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """One L2-normalised row per text."""


class OnnxSentenceEmbedder:
    """Mean-pooled, L2-normalised sentence vectors (all-MiniLM-L6-v2 by default)."""

    def __init__(
        self,
        model_path: Path,
        tokenizer_path: Path,
        *,
        threads: int = 2,
        batch_size: int = 64,
        remembered: int = RECENT_VECTORS,
    ) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Spinning worker threads between calls starve numpy and LanceDB on a 2-core machine
        # (about 10 ms a retrieval under load, measured by benchmarks/retrieval_scale.py).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(
            str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {entry.name for entry in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.enable_padding()
        self.batch_size = batch_size
        self.dimensions: int = int(self._session.get_outputs()[0].shape[-1])
        self.remembered = remembered  # how many recent texts' vectors are kept
        self._recent: OrderedDict[str, NDArray[np.float32]] = OrderedDict()
        self._recent_lock = threading.Lock()

    def without_memory(self) -> OnnxSentenceEmbedder:
        """The same model (the session is shared) computing every vector afresh: for timing
        the model itself."""
        fresh = copy.copy(self)
        fresh.remembered = 0
        fresh._recent = OrderedDict()
        fresh._recent_lock = threading.Lock()
        return fresh

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        with self._recent_lock:
            known = {text: self._recent[text] for text in texts if text in self._recent}
        missing = list(dict.fromkeys(text for text in texts if text not in known))
        if missing:
            batches = [
                self._embed_batch(missing[start : start + self.batch_size])
                for start in range(0, len(missing), self.batch_size)
            ]
            computed = dict(zip(missing, np.concatenate(batches), strict=True))
            known |= computed
            with self._recent_lock:
                for text in missing[-self.remembered :] if self.remembered else ():
                    self._recent[text] = computed[text].copy()  # not a view of the batch
                while len(self._recent) > self.remembered:
                    self._recent.popitem(last=False)
        with self._recent_lock:
            for text in known:
                if text in self._recent:
                    self._recent.move_to_end(text)
        return np.stack([known[text] for text in texts])

    def _embed_batch(self, texts: Sequence[str]) -> NDArray[np.float32]:
        encodings = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden: NDArray[np.float32] = self._session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        normalised: NDArray[np.float32] = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return normalised
