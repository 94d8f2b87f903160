"""How the memory stream retrieves and when it merges a near-copy: one frozen setting each."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from memory.scoring import UTILITY_BOUND, RetrievalWeights

RelevanceMode = Literal["cosine", "text", "hybrid", "rrf", "contextual"]


@dataclass(frozen=True)
class MemoryConfig:
    weights: RetrievalWeights = field(default_factory=RetrievalWeights)
    # How relevance to the query is measured (recall on LoCoMo: python -m benchmarks.locomo):
    # cosine: cosine similarity of the MiniLM vectors;
    # text: BM25 (LanceDB full-text search);
    # hybrid: (1 - text_weight) * min-max(cosine) + text_weight * min-max(BM25);
    # rrf: reciprocal-rank fusion of the two rankings, same shares, constant rrf_k;
    # contextual (default): hybrid, plus the query's names (subject_boost) and the record's
    #   neighbours in its episode (context_weight); see memory.stream.relevance.Relevance.
    relevance: RelevanceMode = "contextual"
    # Share of the lexical (BM25) signal in hybrid, rrf and contextual relevance.
    text_weight: float = 0.5
    rrf_k: int = 60
    # contextual: a capitalised word of the query that opens records (the speaker of "Anna: ...",
    # the subject of "Anna moved ...") adds this to their relevance (on the 0-1 scale of the
    # blend), and half of the cosine term is measured on the query without those names.
    # 0 turns this off.
    subject_boost: float = 0.5
    # contextual: a record also gets context_weight ** d of the relevance of the records d
    # places before and after it in creation order (the better side; d <= context_radius),
    # when they are of the same kind and created within context_gap_seconds of it: the turns
    # around a conversation turn answer or explain it. 0 turns this off.
    context_weight: float = 0.5
    context_radius: int = 2
    context_gap_seconds: float = 1800.0
    # Score every record the filters allow, from an in-memory copy of the vectors (1.5 KB of
    # RAM a record: 150 MB at 100k), so each term is min-max normalised over all of them and
    # the top k is exact. False: score a candidate list read from the indices (the
    # vector_candidates nearest, the static_candidates best by recency and importance, and
    # their episode neighbours); less memory, normalised over the candidates only. Both take
    # BM25 scores from the text_candidates best text hits.
    exact_scoring: bool = True
    # hybrid and contextual: the memories a knowledge-graph search finds for the query (the
    # stream's ``graph`` source; see memory.graph.search.GraphRelevance) add graph_weight times
    # their graph score (0-1) to their relevance. 0, or no source, turns this off.
    graph_weight: float = 0.0
    vector_candidates: int = 100
    text_candidates: int = 100
    static_candidates: int = 50
    duplicate_cosine: float = 0.95
    duplicate_window_hours: float = 24.0
    # Utility (weights.utility is its weight in the score): what a memory gains when it helped
    # (used in a reply the user did not correct, or by a task that finished) and loses when it
    # misled (used in a reply the user corrected, edited or deleted by the user), kept within
    # +-utility_bound. A loss is twice a gain: a correction is said, an absence of one only
    # inferred (the user may not have noticed), so one correction undoes two quiet uses.
    utility_gain: float = 1.0
    utility_loss: float = 2.0
    utility_bound: float = UTILITY_BOUND
