"""Figures built on the rankings, for the home page and the charts: each category's leader, a problem's best speedup
over time, a run's curves (pass@k against k, fast_p against p) and the score-against-cost front across runs.

Rankings themselves are computed in ``selectors`` (``problem_ranking``, ``model_run_score``); this module only
combines what they return, so a change to a ranking rule shows here without a change here.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable

from django.db.models import Count

from evaluator.contract.result import Verdict
from leaderboard.models import ModelRun, Problem, Result
from leaderboard.rankings import metrics, selectors

# fast_p is drawn at these p (×: a correct attempt whose speedup's interval lies above p counts).
FAST_P_CURVE: tuple[float, ...] = (0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 4.0)


@dataclass(frozen=True)
class ProblemLeader:
    problem_id: str
    profile: str | None
    leader: selectors.RankingEntry | None  # the ranking's first entry; None on a CPU profile (verdicts only)
    solutions: int  # entries in the ranking (each user's and each run's best)


@dataclass(frozen=True)
class CategorySummary:
    category: str
    leader: str  # who holds the most first places (the best speedup among them breaks ties); "" when nobody
    leader_firsts: int
    best_speedup: float | None
    best_problem_id: str
    solutions: int
    problems: int


def ranking_profiles(problems: Iterable[Problem], default: dict[str, str | None]) -> dict[str, str | None]:
    """The profile whose ranking speaks for each problem on the home page: the one with the most passed
    evaluations among those that measure speed (``metrics.measures_speed``: GPU profiles), re-measurements left out,
    else ``default[problem_id]`` (one query)."""
    problems = list(problems)
    counts = (Result.objects.filter(verdict=Verdict.PASSED.value, submission__problem__in=problems,
                                    submission__remeasure_of__isnull=True)
              .values_list("submission__problem_id", "submission__profile").annotate(n=Count("pk")))
    best: dict[str, tuple[int, str]] = {}
    for pid, profile, n in counts:
        if metrics.measures_speed(profile) and n > best.get(pid, (0, ""))[0]:
            best[pid] = (n, profile)
    return {p.id: best[p.id][1] if p.id in best else default.get(p.id) for p in problems}


def entry_name(entry: selectors.RankingEntry) -> str:
    return f"{entry.model} (run #{entry.model_run_id})" if entry.model_run_id else entry.username


def category_summaries(pairs: Iterable[tuple[Problem, str | None]]
                       ) -> tuple[dict[str, CategorySummary], dict[str, ProblemLeader]]:
    """Per category, the current leader, the best speedup and the number of solutions, over each problem's
    ranking on the profile paired with it (its page's default; ``selectors.problem_ranking``: one row per distinct
    solution, repeats pooled, the current version and revision); and each problem's leader."""
    leaders: dict[str, ProblemLeader] = {}
    by_category: dict[str, list[ProblemLeader]] = {}
    for problem, profile in pairs:
        ranking = selectors.problem_ranking(problem=problem, profile=profile) if profile else []
        # A leader is the fastest solution: on a profile that does not measure speed (CPU) there is none.
        item = ProblemLeader(problem.id, profile, ranking[0] if ranking and ranking[0].timed else None, len(ranking))
        leaders[problem.id] = item
        by_category.setdefault(problem.category, []).append(item)
    summaries = {}
    for category, items in by_category.items():
        firsts = Counter(entry_name(i.leader) for i in items if i.leader)
        best = {}
        for i in items:
            if i.leader and i.leader.speedup is not None:
                name = entry_name(i.leader)
                best[name] = max(best.get(name, 0.0), i.leader.speedup)
        leader = max(firsts, key=lambda n: (firsts[n], best.get(n, 0.0)), default="")
        timed = [i for i in items if i.leader and i.leader.speedup is not None]
        top = max(timed, key=lambda i: i.leader.speedup, default=None)
        summaries[category] = CategorySummary(
            category=category, leader=leader, leader_firsts=firsts.get(leader, 0),
            best_speedup=top.leader.speedup if top else None, best_problem_id=top.problem_id if top else "",
            solutions=sum(i.solutions for i in items), problems=len(items))
    return summaries, leaders


@dataclass(frozen=True)
class RecordPoint:
    at: datetime
    speedup: float
    username: str
    submission_id: int


def problem_best_over_time(*, problem: Problem, profile: str, published: bool = False) -> list[RecordPoint]:
    """Each time the problem's best speedup on ``profile`` improved, over the solutions its ranking counts
    (``selectors.problem_ranking``, so the same versions, revisions and pooling): in submission order, kept when
    faster than every earlier one."""
    entries = [e for e in selectors.problem_ranking(problem=problem, profile=profile, published=published)
               if e.speedup is not None and math.isfinite(e.speedup)]
    points: list[RecordPoint] = []
    for e in sorted(entries, key=lambda e: (e.submitted_at, e.submission_id)):
        if not points or e.speedup > points[-1].speedup:
            points.append(RecordPoint(e.submitted_at, e.speedup, entry_name(e), e.submission_id))
    return points


@dataclass(frozen=True)
class RunCurves:
    ks: list[int]
    pass_at: list[float | None]  # the run's mean pass@k at each k of ks
    ps: list[float]
    fast_at: list[float | None]  # mean fast_p@k at the run's k, for each p of ps
    k: int


def model_run_curves(*, run: ModelRun, attempts: list[selectors.AttemptRow] | None = None) -> RunCurves:
    """pass@k for k = 1 … the run's k, and fast_p@k (at the run's k) against p: the same scoring as every score
    of the run (``selectors.model_run_score``: fast_p on the interval's lower bound, none on a CPU profile)."""
    attempts = selectors.model_run_attempts(run=run) if attempts is None else attempts
    suite = selectors.model_run_suite(run=run)
    ks = list(range(1, max(run.k, 1) + 1))
    pass_at = [selectors.model_run_score(run=run, attempts=attempts, k=k, suite=suite, intervals=False)
               .overall.mean_pass_at_k for k in ks]
    scored = selectors.model_run_score(run=run, attempts=attempts, suite=suite, intervals=False,
                                       thresholds=FAST_P_CURVE)
    return RunCurves(ks=ks, pass_at=pass_at, ps=list(FAST_P_CURVE),
                     fast_at=[scored.overall.mean_fast_p_at_k.get(p) for p in FAST_P_CURVE], k=scored.k)


@dataclass(frozen=True)
class CostPoint:
    run_id: int
    label: str
    score: float
    tokens: int
    wall_time_s: float
    front_tokens: bool  # on the Pareto front of score against tokens (no run scores more for fewer tokens)
    front_time: bool  # the same against wall time


def _front(points: list[tuple[float, float]]) -> set[int]:
    """Indices of the points no other point dominates (cost no higher, score no lower, one of them strictly)."""
    keep = set()
    for i, (cost, score) in enumerate(points):
        if not any((c <= cost and s >= score) and (c < cost or s > score) for j, (c, s) in enumerate(points)
                   if j != i):
            keep.add(i)
    return keep


def score_against_cost(runs: Iterable[ModelRun], limit: int = 500) -> list[CostPoint]:
    """Each scored run's pass@k against what its search cost (tokens, wall time), with the Pareto fronts. Runs that
    did not report a cost are left out of that axis's front but kept as points (cost 0 is drawn at the axis)."""
    rows = []
    for run in runs[:limit]:
        score = getattr(getattr(run, "score", None), "pass_at_k", None)
        if score is None:
            continue
        rows.append((run, float(score)))
    by_tokens = _front([(float(r.tokens), s) for r, s in rows if r.tokens])
    tokens_index = [i for i, (r, _) in enumerate(rows) if r.tokens]
    by_time = _front([(float(r.wall_time_s), s) for r, s in rows if r.wall_time_s])
    time_index = [i for i, (r, _) in enumerate(rows) if r.wall_time_s]
    front_tokens = {tokens_index[i] for i in by_tokens}
    front_time = {time_index[i] for i in by_time}
    return [CostPoint(run_id=r.pk, label=f"#{r.pk} {r.model} ({r.mode}, k={r.k})", score=s,
                      tokens=int(r.tokens), wall_time_s=float(r.wall_time_s), front_tokens=i in front_tokens,
                      front_time=i in front_time)
            for i, (r, s) in enumerate(rows)]
