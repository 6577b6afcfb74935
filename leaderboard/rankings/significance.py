"""Intervals and the decisions taken with them: bootstrap intervals over problems, pooling repeated evaluations of
the same code, rank ranges, whether two figures differ, whether a re-measurement agrees. Plain functions, no Django;
docs/model-runs.md ("Significance") gives the definitions with a worked example.

- **Bootstrap over problems** (:func:`bootstrap_interval`): the problems a score is over are resampled with
  replacement, as many as there are, and the score recomputed on each resample; the interval is the 2.5 % and 97.5 %
  quantiles of those scores (the smallest value whose cumulative share reaches 0.025, resp. 0.975). Up to
  ``EXACT_MAX_ITEMS`` problems every distinct resample is enumerated with its multinomial probability, so the
  interval is exact and can be worked by hand; above it ``RESAMPLES`` resamples are drawn from a generator seeded
  with ``SEED``, so the same data always give the same interval.
- **Significantly better**: A is significantly better than B on a figure when A's interval lies wholly above B's
  (A's low > B's high). A rank is then the range ``1 + #significantly better`` .. ``N - #significantly worse``.
- **Pooling repeats** (:func:`pool`): evaluations of the same code each give a speedup with a 95 % interval; the
  store holds those summaries, not the per-iteration samples, so they are combined on the log scale by a
  random-effects mean (DerSimonian and Laird): each log speedup weighs 1 / (its variance + tau²), where its standard
  error is the interval's log width / (2 · 1.96) and tau² the spread between evaluations beyond what their own
  intervals explain. Identical code that reads 0.82, 0.98 and 0.71 gets one estimate near their middle with a wide
  interval, never the best of three.
- **Agreement** (:func:`agrees`): a re-measurement agrees with its original when their intervals overlap.
- **Two runs compared** (:func:`compare_scores`): at a common k, per figure, B - A over the problems both scored,
  resampled together (for the geomean the ratio of per-problem geomeans); an interval holding 0 (1 for a ratio)
  is "no significant difference".
"""

from __future__ import annotations

import functools
import itertools
import math
import random
from dataclasses import dataclass
from typing import Callable, Mapping, Protocol, Sequence, TypeVar

T = TypeVar("T")


# What :func:`compare_scores` reads of a run's score (``metrics.RunScore`` and its ``ProblemScore``), stated as shapes
# so that this module needs nothing of ``metrics``, which builds on it.
class ScoredProblem(Protocol):
    @property
    def scorable(self) -> bool: ...
    @property
    def pass_at_k(self) -> float | None: ...
    @property
    def fast_p_at_k(self) -> Mapping[float, float | None]: ...
    @property
    def geomean_speedup(self) -> float | None: ...


class ScoredRun(Protocol):
    @property
    def k(self) -> int: ...
    @property
    def thresholds(self) -> tuple[float, ...]: ...
    @property
    def problems(self) -> Mapping[str, ScoredProblem]: ...
    @property
    def timed(self) -> bool: ...


LEVEL = 0.95
EXACT_MAX_ITEMS = 7  # C(13, 7) = 1716 distinct resamples of 7 problems
RESAMPLES = 1000
SEED = 20261201
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high

    def above(self, other: "Interval") -> bool:
        """Wholly above ``other``: significantly greater."""
        return self.low > other.high


def _quantile(weighted: list[tuple[float, float]], q: float) -> float:
    """The smallest value whose cumulative weight reaches ``q`` (weights summing to 1)."""
    total = 0.0
    ordered = sorted(weighted)
    for value, weight in ordered:
        total += weight
        if total >= q - 1e-12:
            return value
    return ordered[-1][0]


def bootstrap_interval(
    items: Sequence[T], statistic: Callable[[list[tuple[T, int]]], float | None], *, level: float = LEVEL
) -> Interval | None:
    """The percentile bootstrap interval of ``statistic`` over ``items`` (problems), resampled with replacement.

    ``statistic`` takes a resample as (item, how many times drawn) pairs and returns its value, or None when the
    resample has none (e.g. no timed attempt in it): such resamples are left out. None for no items.
    """
    n = len(items)
    if n == 0:
        return None
    values: list[tuple[float, float]] = []
    if n <= EXACT_MAX_ITEMS:
        log_nn = n * math.log(n)
        log_fact_n = math.lgamma(n + 1)
        for combo in itertools.combinations_with_replacement(range(n), n):
            counts: dict[int, int] = {}
            for i in combo:
                counts[i] = counts.get(i, 0) + 1
            weight = math.exp(log_fact_n - sum(math.lgamma(c + 1) for c in counts.values()) - log_nn)
            value = statistic([(items[i], c) for i, c in counts.items()])
            if value is not None:
                values.append((value, weight))
    else:
        for drawn in _resamples(n):
            value = statistic([(items[i], c) for i, c in drawn])
            if value is not None:
                values.append((value, 1.0))
    if not values:
        return None
    total = math.fsum(w for _, w in values)
    weighted = [(v, w / total) for v, w in values]
    tail = (1 - level) / 2
    return Interval(_quantile(weighted, tail), _quantile(weighted, 1 - tail))


@functools.lru_cache(maxsize=16)
def _resamples(n: int) -> tuple[tuple[tuple[int, int], ...], ...]:
    """The ``RESAMPLES`` resamples of n items, each as (index, times drawn) pairs in first-drawn order: drawn from a
    generator seeded with ``SEED``, so they depend on n only and are drawn once per process."""
    rng = random.Random(SEED)
    indices = range(n)
    out = []
    for _ in range(RESAMPLES):
        counts: dict[int, int] = {}
        for i in rng.choices(indices, k=n):
            counts[i] = counts.get(i, 0) + 1
        out.append(tuple(counts.items()))
    return tuple(out)


def mean_statistic(resample: list[tuple[float, int]]) -> float | None:
    """The mean of per-problem values (pass@k, fast_p@k) over a resample."""
    count = sum(c for _, c in resample)
    return math.fsum(v * c for v, c in resample) / count if count else None


def pooled_geomean_statistic(resample: list[tuple[tuple[float, int], int]]) -> float | None:
    """The geometric mean over every timed attempt of the resampled problems, each problem given as (sum of its
    attempts' log speedups, how many): the run's geomean pools attempts, so its bootstrap does too."""
    count = sum(n * c for (_, n), c in resample)
    return math.exp(math.fsum(s * c for (s, _), c in resample) / count) if count else None


def paired_difference_statistic(resample: list[tuple[tuple[float, float], int]]) -> float | None:
    """The mean of b - a over a resample of problems both runs were scored on (paired)."""
    return mean_statistic([(b - a, c) for (a, b), c in resample])


def paired_log_ratio_statistic(resample) -> float | None:
    """log(geomean b / geomean a) over a resample of problems, each (a's (sum log, n), b's (sum log, n))."""
    a = pooled_geomean_statistic([(x, c) for (x, _), c in resample])
    b = pooled_geomean_statistic([(y, c) for (_, y), c in resample])
    return math.log(b / a) if a and b else None


# --- ranks ---------------------------------------------------------------------------------------------------


def rank_ranges(intervals: Sequence[Interval | None]) -> list[tuple[int, int] | None]:
    """For each interval its rank range among those given: (1 + how many lie wholly above it,
    N - how many lie wholly below it); None for a missing interval (not ranked). O(N log N)."""
    present = [iv for iv in intervals if iv is not None]
    lows = sorted(iv.low for iv in present)
    highs = sorted(iv.high for iv in present)
    n = len(present)
    import bisect

    out: list[tuple[int, int] | None] = []
    for iv in intervals:
        if iv is None:
            out.append(None)
            continue
        better = n - bisect.bisect_right(lows, iv.high)  # others' low > my high
        worse = bisect.bisect_left(highs, iv.low)  # others' high < my low
        out.append((1 + better, n - worse))
    return out


def rank_label(rank: tuple[int, int] | None) -> str:
    if rank is None:
        return ""
    best, worst = rank
    return str(best) if best == worst else f"{best}–{worst}"


# --- pooling repeats -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """A speedup with its 95 % interval and the number of evaluations behind it."""

    value: float
    low: float | None
    high: float | None
    evaluations: int

    @property
    def interval(self) -> Interval | None:
        return Interval(self.low, self.high) if self.low is not None and self.high is not None else None


def _log_se(low: float | None, high: float | None) -> float | None:
    if low is None or high is None or low <= 0 or high <= 0 or high < low:
        return None
    return max((math.log(high) - math.log(low)) / (2 * Z95), 1e-9)


def pool(estimates: Sequence[tuple[float, float | None, float | None]]) -> Estimate | None:
    """One estimate from several evaluations of the same code, each (speedup, ci_low, ci_high): a random-effects
    mean of the log speedups (see the module docstring). Evaluations without an interval count with the largest
    standard error among the others (or, when none has one, the plain geometric mean is returned without an
    interval)."""
    usable = [(v, lo, hi) for v, lo, hi in estimates if v is not None and v > 0 and math.isfinite(v)]
    if not usable:
        return None
    if len(usable) == 1:
        v, lo, hi = usable[0]
        return Estimate(v, lo, hi, 1)
    xs = [math.log(v) for v, _, _ in usable]
    ses = [_log_se(lo, hi) for _, lo, hi in usable]
    known = [s for s in ses if s is not None]
    if not known:
        return Estimate(math.exp(math.fsum(xs) / len(xs)), None, None, len(usable))
    fallback = max(known)
    variances = [(s if s is not None else fallback) ** 2 for s in ses]
    w = [1 / v for v in variances]
    sw = math.fsum(w)
    fixed = math.fsum(wi * x for wi, x in zip(w, xs)) / sw
    q = math.fsum(wi * (x - fixed) ** 2 for wi, x in zip(w, xs))
    denominator = sw - math.fsum(wi * wi for wi in w) / sw
    tau2 = max(0.0, (q - (len(xs) - 1)) / denominator) if denominator > 0 else 0.0
    w_star = [1 / (v + tau2) for v in variances]
    sw_star = math.fsum(w_star)
    mean = math.fsum(wi * x for wi, x in zip(w_star, xs)) / sw_star
    se = math.sqrt(1 / sw_star)
    return Estimate(math.exp(mean), math.exp(mean - Z95 * se), math.exp(mean + Z95 * se), len(usable))


# --- agreement -----------------------------------------------------------------------------------------------


def agrees(
    original: Interval | None,
    remeasured: Interval | None,
    *,
    original_value: float | None = None,
    remeasured_value: float | None = None,
) -> bool | None:
    """Whether a re-measurement agrees with its original: their intervals overlap (None when either has none
    and no value to fall back on; a bare value must lie inside the other's interval)."""
    if original is not None and remeasured is not None:
        return not (original.above(remeasured) or remeasured.above(original))
    if original is not None and remeasured_value is not None:
        return original.contains(remeasured_value)
    if remeasured is not None and original_value is not None:
        return remeasured.contains(original_value)
    return None


# --- two runs compared -----------------------------------------------------------------------------------------


def _plain_mean(values: list[float]) -> float:
    return math.fsum(values) / len(values)


def interval_key(p: float) -> str:
    """The key of fast_p@k's interval: "fast_1", "fast_1_5", "fast_2"."""
    return "fast_" + f"{float(p):g}".replace(".", "_")


@dataclass(frozen=True)
class Difference:
    """B minus A on one figure over the problems both runs were scored on, with its paired bootstrap interval
    (for the geomean: B / A). ``significant`` is False when the interval holds no difference (0, or 1 for a
    ratio): "no significant difference"."""

    name: str
    a: float | None
    b: float | None
    difference: float | None
    interval: Interval | None
    ratio: bool = False
    problems: int = 0

    @property
    def significant(self) -> bool:
        if self.interval is None:
            return False
        null = 1.0 if self.ratio else 0.0
        return not self.interval.contains(null)


def compare_scores(a: ScoredRun, b: ScoredRun) -> list[Difference]:
    """pass@k, fast_p@k and the geomean of two runs scored at the same k, compared problem by problem over the
    problems both scored: the difference of the means with a paired bootstrap interval over those problems."""
    if a.k != b.k:
        raise ValueError(f"compare runs at a common k, not {a.k} and {b.k}")
    common = sorted(
        pid for pid in a.problems if pid in b.problems and a.problems[pid].scorable and b.problems[pid].scorable
    )
    out = []

    def paired(name: str, get) -> None:
        pairs = [(get(a.problems[pid]), get(b.problems[pid])) for pid in common]
        pairs = [(x, y) for x, y in pairs if x is not None and y is not None]
        if not pairs:
            out.append(Difference(name, None, None, None, None))
            return
        ma, mb = _plain_mean([x for x, _ in pairs]), _plain_mean([y for _, y in pairs])
        out.append(
            Difference(
                name,
                ma,
                mb,
                mb - ma,  # type: ignore[operator]
                bootstrap_interval(pairs, paired_difference_statistic),
                problems=len(pairs),
            )
        )

    paired("pass_at_k", lambda s: s.pass_at_k)
    if a.timed and b.timed:
        for p in a.thresholds:
            paired(interval_key(p), lambda s, p=p: s.fast_p_at_k.get(p))
        # Speed: per problem both solved, log(b's geomean / a's geomean); the ratio is exp of their mean.
        logs = [
            math.log(b.problems[pid].geomean_speedup / a.problems[pid].geomean_speedup)
            for pid in common
            if a.problems[pid].geomean_speedup and b.problems[pid].geomean_speedup
        ]
        if logs:
            iv = bootstrap_interval(logs, mean_statistic)
            ratio = math.exp(math.fsum(logs) / len(logs))
            out.append(
                Difference(
                    "geomean",
                    None,
                    None,
                    ratio,
                    Interval(math.exp(iv.low), math.exp(iv.high)) if iv else None,
                    ratio=True,
                    problems=len(logs),
                )
            )
        else:
            out.append(Difference("geomean", None, None, None, None, ratio=True))
    return out
