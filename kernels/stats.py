"""Small statistics for benchmark results (pure Python: the runner must not need numpy)."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence


def geomean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def bootstrap_ratio_ci(
    baseline: Sequence[float], candidate: Sequence[float], resamples: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """95% interval of median(baseline) / median(candidate), resampling each side."""
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        b = statistics.median(rng.choices(baseline, k=len(baseline)))
        c = statistics.median(rng.choices(candidate, k=len(candidate)))
        ratios.append(b / c)
    ratios.sort()
    return ratios[int(0.025 * resamples)], ratios[int(0.975 * resamples) - 1]


def bootstrap_geomean_ci(
    samples: Sequence[tuple[Sequence[float], Sequence[float]]], resamples: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """95% interval of the geometric-mean speedup over configurations."""
    rng = random.Random(seed)
    scores = []
    for _ in range(resamples):
        ratios = [
            statistics.median(rng.choices(b, k=len(b))) / statistics.median(rng.choices(c, k=len(c)))
            for b, c in samples
        ]
        scores.append(geomean(ratios))
    scores.sort()
    return scores[int(0.025 * resamples)], scores[int(0.975 * resamples) - 1]
