"""Generative Agents' retrieval score (Park et al. 2023, section 4.1), vectorised over columns,
with a fourth term for what the memory has been worth in use.

score = w_recency * recency + w_importance * importance + w_relevance * relevance
      + w_utility * utility, where
recency = 0.995 ** (hours since last access), importance is the 1-10 rating and relevance is
the similarity to the query; each of these is min-max normalised to [0, 1] over the candidates
before weighting. When every candidate has the same value for a term, that term carries no
information about the order, so it normalises to 0 for all (``TIED_VALUE``).

Utility is not min-max normalised: it is the stored utility over its bound, in [-1, 1], the
same scale whatever the other records hold (``utility_term``). Min-max would hand the full
weight to the first memory ever credited, and shrink a credit whenever another memory
reached a new extreme; on a fixed scale one uncorrected use is always worth the same, and a
memory never used or corrected (utility 0) adds nothing, so with no usage yet the ranking is
the three-term one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

RECENCY_DECAY_PER_HOUR = 0.995
# Stored utility is kept within +-UTILITY_BOUND (memory.stream.config.MemoryConfig), so a
# memory that helped often cannot outweigh relevance forever.
UTILITY_BOUND = 5.0
# The utility weight chosen on the LoCoMo dev set (docs/BENCHMARKS.md, "Utility").
UTILITY_WEIGHT = 0.05
TIED_VALUE = 0.0
MICROSECONDS_PER_HOUR = 3_600_000_000

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class RetrievalWeights:
    recency: float = 1.0
    importance: float = 1.0
    relevance: float = 1.0
    utility: float = UTILITY_WEIGHT


def recency(
    last_accessed_us: NDArray[np.int64], now_us: int, decay: float = RECENCY_DECAY_PER_HOUR
) -> FloatArray:
    """decay ** hours since last access; a future access time counts as now."""
    hours = np.maximum(now_us - last_accessed_us, 0).astype(np.float64) / MICROSECONDS_PER_HOUR
    result: FloatArray = np.power(decay, hours)
    return result


def min_max(values: FloatArray) -> FloatArray:
    if values.size == 0:
        return values
    low, high = float(values.min()), float(values.max())
    if high - low <= 1e-12:
        return np.full(values.shape, TIED_VALUE, dtype=np.float64)
    result: FloatArray = (values - low) / (high - low)
    return result


def utility_term(utility: FloatArray, bound: float = UTILITY_BOUND) -> FloatArray:
    """Stored utility on the fixed scale [-1, 1] (0: never used nor corrected)."""
    result: FloatArray = np.clip(utility / bound, -1.0, 1.0)
    return result


def combined_score(
    recency_values: FloatArray,
    importance_values: FloatArray,
    relevance_values: FloatArray,
    weights: RetrievalWeights,
    utility_values: FloatArray | None = None,
    bound: float = UTILITY_BOUND,
) -> FloatArray:
    """The score from raw values (no utility given: every record's is 0)."""
    utility = np.zeros(recency_values.shape) if utility_values is None else utility_values
    normalised = (
        min_max(recency_values),
        min_max(importance_values),
        min_max(relevance_values),
        utility_term(utility, bound),
    )
    return weighted_sum(normalised, weights)


def weighted_sum(
    terms: tuple[FloatArray, FloatArray, FloatArray, FloatArray], weights: RetrievalWeights
) -> FloatArray:
    """The score from terms already on their scales: recency, importance, relevance (each
    min-max normalised) and utility (``utility_term``)."""
    result: FloatArray = (
        weights.recency * terms[0]
        + weights.importance * terms[1]
        + weights.relevance * terms[2]
        + weights.utility * terms[3]
    )
    return result


def cosine(query: NDArray[np.float32], vectors: NDArray[np.float32]) -> FloatArray:
    """Cosine similarity of one query against rows (rows need not be normalised)."""
    if len(vectors) == 0:
        return np.zeros(0, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1) * max(float(np.linalg.norm(query)), 1e-12)
    result: FloatArray = (vectors @ query).astype(np.float64) / np.maximum(norms, 1e-12)
    return result


def reciprocal_rank(values: FloatArray, constant: int = 60) -> FloatArray:
    """1 / (constant + rank), rank 1 for the largest value (reciprocal-rank fusion, Cormack et
    al. 2009, use constant 60); equal values take consecutive ranks in their order."""
    ranks = np.empty(values.size, dtype=np.float64)
    ranks[np.argsort(-values, kind="stable")] = np.arange(1, values.size + 1)
    result: FloatArray = 1.0 / (constant + ranks)
    return result
