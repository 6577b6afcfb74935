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


def speedup(
    baseline_us: Sequence[float], solution_us: Sequence[float], resamples: int = 400, seed: int = 0
) -> dict[str, float]:
    """The median of the per-iteration ratios baseline_i / solution_i, with a 95% bootstrap interval.

    Each iteration timed both callables interleaved on the same fresh inputs, so the ratio of a pair cancels what
    the two share: a slow moment of the machine, and the work a draw of the inputs asks for (problems with
    uneven counts per rank ask for different work on every draw). ``ratio_of_medians`` is reported beside it;
    for problems of fixed size the two agree.
    """
    n = min(len(baseline_us), len(solution_us))
    ratios = [baseline_us[i] / solution_us[i] for i in range(n)]
    point = statistics.median(ratios)
    rng = random.Random(seed)
    boot = [statistics.median(ratios[rng.randrange(n)] for _ in range(n)) for _ in range(resamples)]
    low, high = percentile(boot, 2.5), percentile(boot, 97.5)
    return {
        "speedup": point,
        "ci_low": low,
        "ci_high": high,
        "uncertainty": (high - low) / 2,
        "ratio_of_medians": statistics.median(baseline_us) / statistics.median(solution_us),
    }
