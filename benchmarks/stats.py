"""The summary figures every benchmark prints."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """Median, nearest-rank 95th percentile and maximum (NaN for no values)."""
    if not values:
        return {"p50": math.nan, "p95": math.nan, "max": math.nan}
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(0.95 * (len(ordered) - 1))))
    return {"p50": statistics.median(ordered), "p95": ordered[index], "max": ordered[-1]}
