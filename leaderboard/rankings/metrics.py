"""Scores of a model run: pass@k, fast_p@k, speedups and roofline fractions, always beside their protocol.

Plain functions and frozen dataclasses, no Django: the ranking selectors, the API and the charts call them with
rows they have already loaded, and the tests call them with hand-worked numbers.

Definitions (one place, so every page says the same thing):

- **pass@k** — the unbiased estimator of Chen et al. (2021, "Evaluating Large Language Models Trained on
  Code"): with ``n`` evaluated attempts of which ``c`` are correct, the chance that at least one of ``k``
  attempts drawn without replacement is correct, ``1 - C(n-c, k) / C(n, k)``. It is computed as the product
  ``1 - prod_{i=n-c+1..n} (1 - k/i)``, which never builds the huge binomials.
- **fast_p@k** — the same estimator where an attempt counts only if it is correct *and* significantly more than
  ``p`` times faster than the PyTorch + NCCL baseline: the *lower bound* of its speedup's 95 % interval is strictly
  greater than ``p`` (a speedup of 1.005 with interval 0.995–1.015 is not fast). An attempt without an interval is
  not counted as fast. ``p`` is 1.0, 1.5 and 2.0 here.
- **Timed profiles only** — on a profile that does not measure speed (the CPU profiles: their timings are pipeline
  checks), fast_p@k, speedups and roofline fractions are None: verdicts only.
- **Intervals** — the run's pass@k, fast_p@k and geomean carry a 95 % bootstrap interval over its scorable problems
  (``significance.bootstrap_interval``); two runs are compared by ``significance.compare_scores``. Whether a run is
  ranked at all is ``standing``'s.
- **Which attempts count** — an attempt whose verdict is ``infra_error`` (the host failed, not the code) or
  still unknown (``None``: not evaluated yet) is left out of ``n``; every other verdict counts, and only
  ``passed`` is correct. A problem left with ``n < k`` is *not scorable* at that ``k``: it is listed in
  :attr:`RunScore.not_scorable`, never dropped silently, and it enters no mean.
- **Speedup means** — a problem's geomean is over its correct attempts that carry a speedup. A run's (and a
  category's) geomean pools *every* correct attempt with a speedup of its scorable problems, so a problem with
  more correct attempts weighs more; it is not a mean of per-problem means. The mean roofline fraction pools
  the same way.
- **Means of pass@k / fast_p@k** — unweighted means over scorable problems. Problems of the suite the run did
  not attempt are listed in :attr:`RunScore.not_attempted` and counted in :attr:`Aggregate.coverage`'s
  denominator; they do not enter the means, so a page must show coverage beside them.
"""

from __future__ import annotations

import math
import operator
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Iterable, Literal, Mapping

from evaluator.contract.profiles import PROFILES
from evaluator.contract.result import Verdict
from leaderboard.rankings import significance
from leaderboard.rankings.significance import interval_key  # noqa: F401  (the intervals' keys; re-exported)

FAST_P_THRESHOLDS: tuple[float, ...] = (1.0, 1.5, 2.0)
PROTOCOL_MODES: tuple[str, ...] = ("zero-shot", "agentic")
EXCLUDED_VERDICTS: frozenset[str] = frozenset({Verdict.INFRA_ERROR.value})


def fast_p_field(p: float) -> str:
    """The name a stored score (``RunScore``, its ``by_category`` records) gives fast_p@k at threshold ``p``:
    "fast_1_at_k", "fast_1_5_at_k", "fast_2_at_k"; RunScore has a column for each of :data:`FAST_P_THRESHOLDS`."""
    return f"{interval_key(p)}_at_k"


def fast_p_label(p: float) -> str:
    """fast_p@k as pages and exports head it: "fast₁@k", "fast₁.₅@k", "fast₂@k"."""
    return f"fast{f'{float(p):g}'.translate(_SUBSCRIPTS)}@k"


_SUBSCRIPTS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def measures_speed(profile: str) -> bool:
    """Whether results on this profile are measurements: GPU profiles. CPU profiles (gloo on one host) time only to
    check the pipeline; their figures show verdicts only and never enter a speedup ranking, a chart or fast_p@k."""
    found = PROFILES.get(profile)
    return found is not None and found.device != "cpu" and not found.smoke


def speed_note(profile: str) -> str | None:
    """What an export says in place of a speedup on a profile that does not measure speed (its speedup and roofline
    fields are null); None where they are measurements. Pages say "not computed" in the same places."""
    if measures_speed(profile):
        return None
    return f"not computed: {profile} times on a CPU, which only checks the pipeline"


def speed_or_none(profile: str, value: float | None) -> float | None:
    """A speedup or roofline fraction as exports carry it: null on a profile that does not measure speed."""
    return value if measures_speed(profile) else None


def _count(value: object, name: str) -> int:
    """A non-negative integer argument (bools refused), with a message naming it."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, not a bool")
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__} ({value!r})") from None
    if number < 0:
        raise ValueError(f"{name} must be 0 or more, not {number}")
    return number


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimator ``1 - C(n-c, k) / C(n, k)`` for ``c`` correct out of ``n`` attempts.

    Computed in product form, ``1 - prod_{i=n-c+1..n} (1 - k/i)``, which stays exact to a few ulps for any
    ``n`` (no factorials). Edge cases are exact: ``c == 0`` gives 0.0 and ``n - c < k`` (every draw of ``k``
    holds a correct attempt) gives 1.0.

    Raises ValueError when ``n < k`` (there are not ``k`` attempts to draw: report the problem as not scorable
    at this ``k`` instead), when ``k < 1`` or when ``c`` is not within ``0..n``.
    """
    n, c, k = _count(n, "n"), _count(c, "c"), _count(k, "k")
    if k < 1:
        raise ValueError(f"k must be 1 or more, not {k}")
    if n < k:
        raise ValueError(
            f"pass@{k} needs at least k={k} attempts, but n={n}; report this problem as not "
            f"scorable at k={k} (or score it at a smaller k)"
        )
    if c > n:
        raise ValueError(f"c={c} correct attempts cannot exceed n={n} attempts")
    if c == 0:
        return 0.0
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def fast_p_at_k(n: int, c_fast: int, k: int) -> float:
    """fast_p@k: the pass@k estimator where ``c_fast`` counts attempts correct *and* with speedup > p.
    ``c_fast`` comes from :func:`fast_count`; the arithmetic and the errors are those of :func:`pass_at_k`."""
    return pass_at_k(n, c_fast, k)


@dataclass(frozen=True)
class Attempt:
    """One evaluated attempt of a model run, as the scorer needs it.

    ``verdict`` is a :class:`~evaluator.contract.result.Verdict` value (``"passed"``, ...) or None while it is not yet
    evaluated; ``speedup`` is baseline time / solution time (None when not timed); ``roofline_fraction`` is
    roofline time / solution time (None when not computed).
    """

    problem_id: str
    category: str
    verdict: str | None
    speedup: float | None = None
    roofline_fraction: float | None = None
    speedup_ci_low: float | None = None  # the lower bound of the speedup's 95 % interval (fast_p@k counts on it)

    def __post_init__(self) -> None:
        if isinstance(self.verdict, Verdict):
            object.__setattr__(self, "verdict", self.verdict.value)
        elif self.verdict is not None:
            try:
                Verdict(self.verdict)
            except ValueError:
                raise ValueError(
                    f"{self.problem_id}: unknown verdict {self.verdict!r}; use one of "
                    f"{', '.join(v.value for v in Verdict)} or None"
                ) from None
        for name in ("speedup", "roofline_fraction", "speedup_ci_low"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not math.isfinite(value) or value <= 0):
                raise ValueError(f"{self.problem_id}: {name} must be a finite number above 0 or None, not {value!r}")

    @property
    def counted(self) -> bool:
        """Whether the attempt enters ``n`` (it was evaluated and the failure, if any, was the code's)."""
        return self.verdict is not None and self.verdict not in EXCLUDED_VERDICTS

    @property
    def correct(self) -> bool:
        return self.verdict == Verdict.PASSED.value


def is_fast(attempt: Attempt, p: float) -> bool:
    """Correct and significantly more than ``p``× faster: the lower bound of its speedup's interval exceeds ``p``."""
    return attempt.correct and attempt.speedup_ci_low is not None and attempt.speedup_ci_low > p


def fast_count(attempts: Iterable[Attempt], p: float) -> int:
    """How many attempts are correct and significantly faster than the baseline by more than ``p`` (the lower
    bound of the speedup's interval > p). A correct attempt without an interval (not timed) does not count."""
    return sum(1 for a in attempts if is_fast(a, p))


def geometric_mean(values: Iterable[float]) -> float | None:
    """exp(mean(log v)); None for no values."""
    logs = [math.log(v) for v in values]
    return math.exp(math.fsum(logs) / len(logs)) if logs else None


def _mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return math.fsum(values) / len(values) if values else None


@dataclass(frozen=True)
class ProblemScore:
    """One problem's attempts scored at ``k``.

    ``pass_at_k`` and ``fast_p_at_k`` are None when ``scorable`` is False (``n < k``). ``excluded`` counts the
    attempts left out of ``n`` (infra errors, not evaluated yet). Speedup and roofline figures are over the
    correct attempts that carry them (None when there are none).
    """

    problem_id: str
    category: str
    k: int
    n: int
    c: int
    excluded: int
    pass_at_k: float | None
    fast_counts: Mapping[float, int]
    fast_p_at_k: Mapping[float, float | None]
    best_speedup: float | None
    geomean_speedup: float | None
    mean_roofline_fraction: float | None

    @property
    def scorable(self) -> bool:
        return self.n >= self.k


def score_problem(
    attempts: Iterable[Attempt],
    k: int,
    *,
    problem_id: str | None = None,
    category: str | None = None,
    thresholds: tuple[float, ...] = FAST_P_THRESHOLDS,
    timed: bool = True,
) -> ProblemScore:
    """Scores the attempts of one problem at ``k``; they must all name the same problem.

    ``problem_id`` and ``category`` are taken from the attempts, or from the arguments when there are none.
    ``timed`` False (a profile that does not measure speed): fast_p@k and the speed figures are None.
    """
    attempts = list(attempts)
    ids = {a.problem_id for a in attempts} | ({problem_id} if problem_id is not None else set())
    if len(ids) != 1:
        raise ValueError(f"score_problem scores one problem; got {sorted(ids) or 'no problem id'}")
    pid = ids.pop()
    categories = {a.category for a in attempts} | ({category} if category is not None else set())
    if len(categories) != 1:
        raise ValueError(f"{pid}: attempts disagree on the category ({sorted(categories)})")
    k = _count(k, "k")
    if k < 1:
        raise ValueError(f"k must be 1 or more, not {k}")
    counted = [a for a in attempts if a.counted]
    correct = [a for a in counted if a.correct]
    n, c = len(counted), len(correct)
    scorable = n >= k
    counts = {p: fast_count(counted, p) for p in thresholds}
    speedups = [a.speedup for a in correct if a.speedup is not None] if timed else []
    return ProblemScore(
        problem_id=pid,
        category=categories.pop(),
        k=k,
        n=n,
        c=c,
        excluded=len(attempts) - n,
        pass_at_k=pass_at_k(n, c, k) if scorable else None,
        fast_counts=counts,
        fast_p_at_k={p: fast_p_at_k(n, counts[p], k) if scorable and timed else None for p in thresholds},
        best_speedup=max(speedups) if speedups else None,
        geomean_speedup=geometric_mean(speedups),
        mean_roofline_fraction=_mean(a.roofline_fraction for a in correct if a.roofline_fraction is not None)
        if timed
        else None,
    )


@dataclass(frozen=True)
class Aggregate:
    """Scores over a set of problems (the whole run or one category), as defined in the module docstring.

    ``problems`` counts the scorable problems the means are over; ``not_scorable`` and ``not_attempted`` name
    the others; ``coverage`` is problems / (problems + not_scorable + not_attempted), None for an empty set.
    """

    problems: int
    mean_pass_at_k: float | None
    mean_fast_p_at_k: Mapping[float, float | None]
    geomean_speedup: float | None
    mean_roofline_fraction: float | None
    correct_attempts: int
    timed_correct_attempts: int
    not_scorable: tuple[str, ...]
    not_attempted: tuple[str, ...]
    # 95 % bootstrap intervals over the scorable problems, keyed "pass_at_k", "fast_1", "fast_1_5", "fast_2",
    # "geomean" (only what could be computed; the whole run's aggregate only).
    intervals: Mapping[str, significance.Interval] = field(default_factory=dict)

    @property
    def coverage(self) -> float | None:
        total = self.problems + len(self.not_scorable) + len(self.not_attempted)
        return self.problems / total if total else None


def _intervals(
    scored: list[ProblemScore], attempts: Mapping[str, list[Attempt]], thresholds: tuple[float, ...], timed: bool
) -> dict[str, significance.Interval]:
    out: dict[str, significance.Interval | None] = {
        "pass_at_k": significance.bootstrap_interval([s.pass_at_k for s in scored], significance.mean_statistic)
    }
    if timed:
        for p in thresholds:
            out[interval_key(p)] = significance.bootstrap_interval(
                [s.fast_p_at_k[p] for s in scored], significance.mean_statistic
            )
        logs = []
        for s in scored:
            values = [
                math.log(a.speedup) for a in attempts[s.problem_id] if a.counted and a.correct and a.speedup is not None
            ]
            logs.append((math.fsum(values), len(values)))
        out["geomean"] = significance.bootstrap_interval(logs, significance.pooled_geomean_statistic)
    return {k: v for k, v in out.items() if v is not None}


def _aggregate(
    scores: list[ProblemScore],
    attempts: Mapping[str, list[Attempt]],
    not_attempted: list[str],
    thresholds: tuple[float, ...],
    *,
    timed: bool = True,
    intervals: bool = False,
) -> Aggregate:
    scored = [s for s in scores if s.scorable]
    correct = [a for s in scored for a in attempts[s.problem_id] if a.counted and a.correct]
    speedups = [a.speedup for a in correct if a.speedup is not None] if timed else []
    return Aggregate(
        problems=len(scored),
        mean_pass_at_k=_mean(s.pass_at_k for s in scored),  # type: ignore[misc]
        mean_fast_p_at_k={
            p: _mean(s.fast_p_at_k[p] for s in scored) if timed else None  # type: ignore[misc]
            for p in thresholds
        },
        geomean_speedup=geometric_mean(speedups),
        mean_roofline_fraction=_mean(a.roofline_fraction for a in correct if a.roofline_fraction is not None)
        if timed
        else None,
        correct_attempts=len(correct),
        timed_correct_attempts=len(speedups),
        not_scorable=tuple(sorted(s.problem_id for s in scores if not s.scorable)),
        not_attempted=tuple(sorted(not_attempted)),
        intervals=_intervals(scored, attempts, thresholds, timed) if intervals else {},
    )


@dataclass(frozen=True)
class Protocol:
    """How a model run's attempts were produced; every score is shown beside :meth:`label`.

    ``mode`` is "zero-shot" (one generation per attempt, ``turn_budget`` 0) or "agentic" (an agent loop of at
    most ``turn_budget`` turns per attempt); ``tokens`` and ``wall_time_s`` are what the whole run spent.
    """

    mode: Literal["zero-shot", "agentic"]
    k: int
    turn_budget: int
    tokens: int
    wall_time_s: float

    def __post_init__(self) -> None:
        if self.mode not in PROTOCOL_MODES:
            raise ValueError(f"protocol mode must be one of {', '.join(PROTOCOL_MODES)}, not {self.mode!r}")
        if _count(self.k, "k") < 1:
            raise ValueError("k must be 1 or more")
        turns = _count(self.turn_budget, "turn_budget")
        if self.mode == "zero-shot" and turns != 0:
            raise ValueError(f"a zero-shot protocol has turn_budget 0, not {turns}")
        if self.mode == "agentic" and turns < 1:
            raise ValueError("an agentic protocol needs a turn_budget of 1 or more")
        _count(self.tokens, "tokens")
        if (
            isinstance(self.wall_time_s, bool)
            or not isinstance(self.wall_time_s, (int, float))
            or not math.isfinite(self.wall_time_s)
            or self.wall_time_s < 0
        ):
            raise ValueError(f"wall_time_s must be a finite number of seconds, 0 or more, not {self.wall_time_s!r}")

    @classmethod
    def of_run(cls, run: object) -> "Protocol":
        """The protocol of a model run (anything with ``mode``, ``k``, ``turn_budget``, ``tokens``, ``wall_time_s``)."""
        return cls(**{name: getattr(run, name) for name in ("mode", "k", "turn_budget", "tokens", "wall_time_s")})

    def label(self) -> str:
        """One line, e.g. ``agentic · k=3 · 40 turns · 2.1M tokens · 3.5 h`` (zero-shot shows no turns)."""
        parts = [self.mode, f"k={self.k}"]
        if self.mode == "agentic":
            parts.append(f"{self.turn_budget} turn" + ("" if self.turn_budget == 1 else "s"))
        parts.append(f"{format_tokens(self.tokens)} tokens")
        parts.append(format_duration(self.wall_time_s))
        return " · ".join(parts)


def _short(value: float) -> str:
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def format_tokens(tokens: int) -> str:
    """850, 12k, 2.1M, 1.3B (one decimal below 10, none above)."""
    if tokens < 1000:
        return str(tokens)
    for size, unit in ((10**9, "B"), (10**6, "M"), (10**3, "k")):
        value = tokens / size
        text = _short(value) if value < 9.95 else f"{value:.0f}"
        if float(text) >= 1:  # 999_999 rounds to 1M, not 1000k
            return text + unit
    return str(tokens)


def format_duration(seconds: float) -> str:
    """45 s, 12 min, 3.5 h."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{_short(seconds / 3600)} h"


@dataclass(frozen=True)
class RunScore:
    """A model run scored at ``k``: every problem, the whole run and each category, beside its protocol."""

    protocol: Protocol
    k: int
    thresholds: tuple[float, ...]
    problems: Mapping[str, ProblemScore]
    overall: Aggregate
    by_category: Mapping[str, Aggregate]
    not_scorable: tuple[str, ...] = field(default=())
    not_attempted: tuple[str, ...] = field(default=())
    timed: bool = True  # False on a profile that does not measure speed: verdicts only

    def label(self) -> str:
        """The protocol's label, with the k the scores use when it differs from the protocol's k."""
        label = self.protocol.label()
        return label if self.k == self.protocol.k else f"{label} · scored at k={self.k}"


def score_run(
    attempts: Iterable[Attempt],
    protocol: Protocol,
    *,
    k: int | None = None,
    suite: Mapping[str, str] | None = None,
    thresholds: tuple[float, ...] = FAST_P_THRESHOLDS,
    timed: bool = True,
    intervals: bool = True,
) -> RunScore:
    """Scores a model run's attempts, grouped by problem, at ``k`` (default: the protocol's k).

    ``suite`` maps every problem id the run could have attempted to its category; those without attempts are
    reported as not attempted (overall and in their category). A smaller ``k`` than the protocol's gives, for
    example, pass@1 estimated from k samples; a larger one leaves every problem not scorable. ``timed`` False: a
    profile that does not measure speed (verdicts only). ``intervals``: bootstrap the whole run's intervals.
    """
    k = protocol.k if k is None else k
    grouped: dict[str, list[Attempt]] = defaultdict(list)
    for attempt in attempts:
        grouped[attempt.problem_id].append(attempt)
    scores = {pid: score_problem(grouped[pid], k, thresholds=thresholds, timed=timed) for pid in sorted(grouped)}
    missing = {pid: cat for pid, cat in (suite or {}).items() if pid not in grouped}

    categories = sorted({s.category for s in scores.values()} | set(missing.values()))
    by_category = {
        cat: _aggregate(
            [s for s in scores.values() if s.category == cat],
            grouped,
            [pid for pid, c in missing.items() if c == cat],
            thresholds,
            timed=timed,
        )
        for cat in categories
    }
    overall = _aggregate(list(scores.values()), grouped, list(missing), thresholds, timed=timed, intervals=intervals)
    return RunScore(
        protocol=protocol,
        k=k,
        thresholds=tuple(thresholds),
        problems=scores,
        overall=overall,
        by_category=by_category,
        not_scorable=overall.not_scorable,
        not_attempted=overall.not_attempted,
        timed=timed,
    )
