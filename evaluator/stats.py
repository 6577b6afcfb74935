"""Summaries of per-iteration timings and the speedup with its uncertainty."""

from __future__ import annotations

import random
import statistics
from typing import Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, q in [0, 100]."""
    data = sorted(values)
    if not data:
        raise ValueError("no values")
    pos = (len(data) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def summarize(values_us: Sequence[float]) -> dict[str, float]:
    return {
        "median_us": statistics.median(values_us),
        "mean_us": statistics.fmean(values_us),
        "min_us": min(values_us),
        "p10_us": percentile(values_us, 10),
        "p90_us": percentile(values_us, 90),
        "iqr_us": percentile(values_us, 75) - percentile(values_us, 25),
        "n": len(values_us),
    }


def slowest_rank(per_rank: Sequence[Sequence[float]]) -> list[float]:
    """The figure for an iteration is its slowest rank's: a collective is done when its last rank is."""
    return [max(column) for column in zip(*per_rank)]


def speedup(baseline_us: Sequence[float], solution_us: Sequence[float], resamples: int = 400,
            seed: int = 0) -> dict[str, float]:
    """median(baseline) / median(solution), with a 95% bootstrap interval over paired iterations.

    Iterations are resampled in pairs because baseline and solution were measured interleaved, so a slow
    moment of the machine affects both sides of a pair.
    """
    point = statistics.median(baseline_us) / statistics.median(solution_us)
    n = min(len(baseline_us), len(solution_us))
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        idx = [rng.randrange(n) for _ in range(n)]
        ratios.append(statistics.median(baseline_us[i] for i in idx) / statistics.median(solution_us[i] for i in idx))
    low, high = percentile(ratios, 2.5), percentile(ratios, 97.5)
    return {"speedup": point, "ci_low": low, "ci_high": high, "uncertainty": (high - low) / 2}
