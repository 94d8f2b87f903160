"""Generative Agents' retrieval score (Park et al. 2023, section 4.1), vectorised over columns.

score = w_recency * recency + w_importance * importance + w_relevance * relevance, where
recency = 0.995 ** (hours since last access), importance is the 1-10 rating and relevance is
the similarity to the query; each term is min-max normalised to [0, 1] over the candidates
before weighting. When every candidate has the same value for a term, that term carries no
information about the order, so it normalises to 0 for all (``TIED_VALUE``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

RECENCY_DECAY_PER_HOUR = 0.995
TIED_VALUE = 0.0
MICROSECONDS_PER_HOUR = 3_600_000_000

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class RetrievalWeights:
    recency: float = 1.0
    importance: float = 1.0
    relevance: float = 1.0


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


def combined_score(
    recency_values: FloatArray,
    importance_values: FloatArray,
    relevance_values: FloatArray,
    weights: RetrievalWeights,
) -> FloatArray:
    normalised = (min_max(recency_values), min_max(importance_values), min_max(relevance_values))
    return weighted_sum(normalised, weights)


def weighted_sum(
    normalised: tuple[FloatArray, FloatArray, FloatArray], weights: RetrievalWeights
) -> FloatArray:
    """The score from terms already normalised: recency, importance, relevance."""
    result: FloatArray = (
        weights.recency * normalised[0]
        + weights.importance * normalised[1]
        + weights.relevance * normalised[2]
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
