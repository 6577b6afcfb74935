"""Figures built on the rankings, for the home page and the charts: each category's leader, a problem's best speedup
over time, a run's curves (pass@k against k, fast_p against p) and the score-against-cost front across runs.

Rankings themselves are computed in ``selectors`` (``problem_ranking``, ``model_run_score``); this module only
combines what they return, so a change to a ranking rule shows here without a change here. The home page reads the
same figures as ``services`` stored them when results were recorded (``stored_leaders``, ``category_lines``: the
problems' and categories' standings); ``category_summaries`` computes them per request from the rankings, which is
what a test holds the stored ones equal to.
"""

from __future__ import annotations

import math
from collections import Counter, namedtuple
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Hashable, Iterable

from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import Count

from evaluator.contract.profiles import PROFILES
from evaluator.contract.result import TIMING_PROTOCOL_REVISION, Verdict
from leaderboard.beyond_contract import percentile
from leaderboard.models import CategoryStanding, ModelRun, Problem, ProblemStanding, Result
from leaderboard.rankings import metrics, prepared, run_selectors, selectors

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
    counts = (
        Result.objects.filter(
            verdict=Verdict.PASSED.value, submission__problem__in=problems, submission__remeasure_of__isnull=True
        )
        .values_list("submission__problem_id", "submission__profile")
        .annotate(n=Count("pk"))
    )
    return {
        p.id: speaking_profile([(profile, n) for pid, profile, n in counts if pid == p.id], default.get(p.id))
        for p in problems
    }


def speaking_profile(counts: Iterable[tuple[str, int]], default: str | None) -> str | None:
    """Of (profile, passed evaluations) pairs, the profile that measures speed with the most (a tie goes to the one
    listed first in the hardware profiles), else ``default``."""
    totals: dict[str, int] = {}
    for profile, n in counts:
        if metrics.measures_speed(profile) and n:
            totals[profile] = totals.get(profile, 0) + n
    if len(totals) < 2:  # (most problems: one profile or none, no tie to break)
        return next(iter(totals), default)
    order = list(PROFILES)
    best = max(totals, key=lambda p: (totals[p], -(order.index(p) if p in order else len(order))), default=None)
    return best if best is not None else default


def entry_name(entry: selectors.RankingEntry) -> str:
    return f"{entry.model} (run #{entry.model_run_id})" if entry.model_run_id else entry.username


def category_summaries(
    pairs: Iterable[tuple[Problem, str | None]],
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
    return summarise(by_category), leaders


def summarise(by_category: dict[str, list[ProblemLeader]]) -> dict[str, CategorySummary]:
    """Each category's summary over its problems' leaders, in the order given (it breaks ties)."""
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
            category=category,
            leader=leader,
            leader_firsts=firsts.get(leader, 0),
            best_speedup=top.leader.speedup if top else None,
            best_problem_id=top.problem_id if top else "",
            solutions=sum(i.solutions for i in items),
            problems=len(items),
        )
    return summaries


# --- the same figures read from the standings kept at ingest (``services.problem_standing_refresh``) -------------


@dataclass(frozen=True)
class StoredLeader:
    """A problem's leader as its ``ProblemStanding`` row keeps it: the fields of ``selectors.RankingEntry`` that the
    home page and ``entry_name`` read."""

    submission_id: int
    user_id: int | None
    username: str
    model_run_id: int | None
    model: str
    speedup: float | None
    timed: bool = True


def stored_leader(problem: Problem, profile: str | None, rows: list[Any]) -> ProblemLeader:
    """The problem's line on the home page from its standing rows (every profile, version and revision): the
    ranking ``problem_ranking`` shows by default on ``profile`` (the problem's current version, the default
    revision of ``selectors.problem_ranking_default``), its leader and its number of solutions."""
    if not profile or profile not in PROFILES:
        return ProblemLeader(problem.id, profile, None, 0)
    here = [r for r in rows if r.profile == profile and r.passed]
    revisions = [r.protocol_revision or None for r in here if r.problem_version == problem.version]
    revision = (
        TIMING_PROTOCOL_REVISION
        if TIMING_PROTOCOL_REVISION in revisions or not revisions
        else max(revisions, key=lambda r: r or 0)
    )
    row = next(
        (r for r in here if r.problem_version == problem.version and (r.protocol_revision or None) == revision), None
    )
    if row is None:
        return ProblemLeader(problem.id, profile, None, 0)
    leader = None
    if row.leader_submission_id is not None and metrics.measures_speed(profile):
        leader = StoredLeader(
            row.leader_submission_id,
            row.leader_user_id,
            row.leader_username,
            row.leader_model_run_id,
            row.leader_model,
            row.best_speedup,
        )
    return ProblemLeader(problem.id, profile, leader, row.solutions)


# What ``stored_leader`` and ``speaking_profile`` read of a ``ProblemStanding`` row.
STANDING_FIELDS = (
    "problem_id",
    "profile",
    "problem_version",
    "protocol_revision",
    "passed",
    "solutions",
    "leader_submission_id",
    "leader_user_id",
    "leader_username",
    "leader_model_run_id",
    "leader_model",
    "best_speedup",
)


StandingRow = namedtuple("StandingRow", STANDING_FIELDS)  # a row of them, as ``values_list(named=True)`` reads it


# Up to this many problems, their standings are read by their ids; more (the whole catalogue on the home page), every
# standing is read and the others skipped: binding 170 ids cost more CPU than the few rows of unlisted problems.
STANDINGS_IN_LIST_MOST = 60


def stored_leaders(
    problems: list[Problem], default: dict[str, str | None]
) -> tuple[dict[str, str | None], dict[str, ProblemLeader]]:
    """Each problem's speaking profile (``speaking_profile`` over its stored passed counts, else ``default``) and its
    line on the home page, from the stored standings (one query, whatever the number of results)."""
    rows: dict[str, list[Any]] = {}
    wanted = {p.id for p in problems}
    # Named tuples of the columns read, not model instances (some 700 rows for the whole catalogue); the query
    # compiled once per process (``prepared.rows``) for the whole catalogue, or for the same few problems.
    few = tuple(sorted(wanted)) if len(wanted) <= STANDINGS_IN_LIST_MOST else None

    def standings() -> Any:
        every = ProblemStanding.objects.order_by("pk").values_list(*STANDING_FIELDS)
        return every.filter(problem_id__in=few) if few is not None else every

    for row in map(StandingRow._make, prepared.rows(("standings", few), standings)):
        if row.problem_id in wanted:
            rows.setdefault(row.problem_id, []).append(row)
    profiles, leaders = {}, {}
    for p in problems:
        mine = rows.get(p.id, [])
        profiles[p.id] = speaking_profile([(r.profile, r.passed) for r in mine], default.get(p.id))
        leaders[p.id] = stored_leader(p, profiles[p.id], mine)
    return profiles, leaders


def stored_summaries(problems: list[Problem], leaders: dict[str, ProblemLeader]) -> dict[str, CategorySummary]:
    """Each category's summary over ``problems`` (in their order) from their stored lines (no query)."""
    by_category: dict[str, list[ProblemLeader]] = {}
    for p in problems:
        by_category.setdefault(p.category, []).append(leaders[p.id])
    return summarise(by_category)


def stored_category_summaries() -> dict[str, CategorySummary]:
    """Each category's summary over all its active problems, as ``CategoryStanding`` keeps it (one query, compiled
    once per process: ``prepared.rows``)."""
    fields = ("category", "leader", "leader_firsts", "best_speedup", "best_problem_id", "solutions", "problems")
    return {
        row[0]: CategorySummary(*row)
        for row in prepared.rows(("category-standings", fields), lambda: CategoryStanding.objects.values_list(*fields))
    }


def category_lines(
    problems: list[Problem], leaders: dict[str, ProblemLeader], *, whole_catalogue: bool
) -> dict[str, CategorySummary]:
    """The home page's line per category of ``problems``: over the whole catalogue, as stored (one query; a
    category without a stored line yet is summed from its problems' lines); over a filtered list, summed from the
    lines of the problems it holds (no query)."""
    summed = stored_summaries(problems, leaders)
    if not whole_catalogue:
        return summed
    stored = stored_category_summaries()
    # A stored line over another set of problems than the one listed (the catalogue changed since) is not used.
    return {
        category: stored[category] if category in stored and stored[category].problems == line.problems else line
        for category, line in summed.items()
    }


@dataclass(frozen=True)
class RecordPoint:
    at: datetime
    speedup: float
    username: str
    submission_id: int


def best_over_time(entries: Iterable[Any]) -> list[RecordPoint]:
    """Of a ranking's rows (``RankingEntry`` or stored rows), each one that was faster than every earlier one, in
    submission order (rows without a finite speedup left out)."""
    points: list[RecordPoint] = []
    timed = [e for e in entries if e.speedup is not None and math.isfinite(e.speedup)]
    for e in sorted(timed, key=lambda e: (e.submitted_at, e.submission_id)):
        if not points or e.speedup > points[-1].speedup:
            points.append(RecordPoint(e.submitted_at, e.speedup, entry_name(e), e.submission_id))
    return points


def history_record(points: list[RecordPoint]) -> list[list[Any]]:
    """``points`` as a standing stores them (``ProblemStanding.history``): [ISO 8601 time, speedup, name, id]."""
    return [[p.at.isoformat(), p.speedup, p.username, p.submission_id] for p in points]


def history_points(record: list[list[Any]]) -> list[RecordPoint]:
    """The points ``history_record`` stored."""
    return [RecordPoint(datetime.fromisoformat(at), speedup, who, sid) for at, speedup, who, sid in record]


def problem_best_over_time(
    *, problem: Problem, profile: str, published: bool = False, measured: selectors.Measurement | None = None
) -> list[RecordPoint]:
    """Each time the problem's best speedup on ``profile`` improved, over the solutions its ranking counts
    (``selectors.problem_ranking``, so the same versions, revisions and pooling): in submission order, kept when
    faster than every earlier one (``best_over_time``). The default ranking's points are read as its standing
    stored them at ingest (``measured``: the page's measurement, which read them already; else one query); only
    "published only" ranks per request."""
    if published:
        return best_over_time(selectors.problem_ranking(problem=problem, profile=profile, published=True))
    measured = measured or selectors.problem_measurement(problem=problem, profile=profile)
    return history_points(measured.default_history)


@dataclass(frozen=True)
class RunCurves:
    ks: list[int]
    pass_at: list[float | None]  # the run's mean pass@k at each k of ks
    ps: list[float]
    fast_at: list[float | None]  # mean fast_p@k at the run's k, for each p of ps
    k: int


def model_run_curves(*, run: ModelRun, attempts: list[run_selectors.AttemptRow] | None = None) -> RunCurves:
    """pass@k for k = 1 … the run's k, and fast_p@k (at the run's k) against p: the same scoring as every score
    of the run (``run_selectors.model_run_score``: fast_p on the interval's lower bound, none on a CPU profile)."""
    attempts = run_selectors.model_run_attempts(run=run) if attempts is None else attempts
    suite = run_selectors.model_run_suite(run=run)
    ks = list(range(1, max(run.k, 1) + 1))
    pass_at = [
        run_selectors.model_run_score(
            run=run, attempts=attempts, k=k, suite=suite, intervals=False
        ).overall.mean_pass_at_k
        for k in ks
    ]
    scored = run_selectors.model_run_score(
        run=run, attempts=attempts, suite=suite, intervals=False, thresholds=FAST_P_CURVE
    )
    return RunCurves(
        ks=ks,
        pass_at=pass_at,
        ps=list(FAST_P_CURVE),
        fast_at=[scored.overall.mean_fast_p_at_k.get(p) for p in FAST_P_CURVE],
        k=scored.k,
    )


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
    """Indices of the points no other point dominates (cost no higher, score no lower, one of them strictly).

    In one sort: a point is on the front when it has the best score at its cost and that score is above every
    score at a lower cost (equal points do not dominate each other, so both stay)."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    keep: set[int] = set()
    best_below = -math.inf  # the best score at any lower cost
    start = 0
    while start < len(order):
        cost = points[order[start]][0]
        end = start
        while end < len(order) and points[order[end]][0] == cost:
            end += 1
        top = points[order[start]][1]  # sorted by score descending within one cost
        if top > best_below:
            keep.update(i for i in order[start:end] if points[i][1] == top)
        best_below = max(best_below, top)
        start = end
    return keep


PARETO_RUNS = 100  # runs the ranking page's cost chart draws: the first of the ranking as sorted, whatever its size


def score_against_cost(runs, limit: int = 500) -> list[CostPoint]:
    """Each scored run's pass@k against what its search cost (tokens, wall time), with the Pareto fronts, over the
    first ``limit`` runs of ``runs`` (a queryset: only the columns drawn are read). Runs that did not report a cost
    are left out of that axis's front but kept as points (cost 0 is drawn at the axis)."""
    return cost_points(cost_rows(runs, limit))


CostRow = tuple[int, str, str, int, int, float, float]  # run id, model, mode, k, tokens, wall time, pass@k


def cost_rows(runs, limit: int = 500, key: Hashable | None = None) -> tuple[CostRow, ...]:
    """What ``score_against_cost`` draws of the first ``limit`` runs of ``runs``: each scored run's id, model, mode,
    k, tokens, wall time and pass@k (one query), everything its points are computed from (``cost_points``). ``key``:
    everything ``runs`` is built from (``run_selectors.ranking_key``), so that its query is compiled once per process
    (``prepared``; on PostgreSQL)."""
    chosen = runs.values_list("pk", "model", "mode", "k", "tokens", "wall_time_s", "score__pass_at_k")[:limit]
    rows: Iterable[tuple[Any, ...]] = chosen
    if key is not None and connection.vendor == "postgresql":
        try:
            sql, params = prepared.sql_with_params(chosen, ("cost_rows", key))
        except EmptyResultSet:  # a filter that can match nothing
            return ()
        with connection.cursor() as cursor:  # (plain columns: read as values_list reads them, no converters)
            cursor.execute(sql, params)
            rows = cursor.fetchall()
    return tuple(
        (pk, model, mode, k, tokens, wall, float(score))
        for pk, model, mode, k, tokens, wall, score in rows
        if score is not None
    )


def cost_points(rows: tuple[CostRow, ...]) -> list[CostPoint]:
    """The points of ``cost_rows``, with the Pareto fronts."""
    return [CostPoint(**record) for record in cost_point_records(rows)]


def cost_point_records(rows: tuple[CostRow, ...]) -> list[dict[str, Any]]:
    """``cost_points`` as the chart's data writes them (``vars`` of each point, in its fields' order), without making
    the frozen points: about a third of the ranking page's chart."""
    tokens_index = [i for i, r in enumerate(rows) if r[4]]
    time_index = [i for i, r in enumerate(rows) if r[5]]
    front_tokens = {tokens_index[i] for i in _front([(float(rows[i][4]), rows[i][6]) for i in tokens_index])}
    front_time = {time_index[i] for i in _front([(float(rows[i][5]), rows[i][6]) for i in time_index])}
    return [
        {
            "run_id": pk,
            "label": f"#{pk} {model} ({mode}, k={k})",
            "score": s,
            "tokens": int(tokens),
            "wall_time_s": float(wall),
            "front_tokens": i in front_tokens,
            "front_time": i in front_time,
        }
        for i, (pk, model, mode, k, tokens, wall, s) in enumerate(rows)
    ]


def problem_history_chart(
    *, problem: Problem, profile: str | None, published: bool, measured: selectors.Measurement | None = None
) -> dict | None:
    """The best speedup over time on ``profile``, as the problem page's chart reads it (None when there is none)."""
    points = (
        problem_best_over_time(problem=problem, profile=profile, published=published, measured=measured)
        if profile
        else []
    )
    if not points:
        return None
    return {
        "at": [p.at.isoformat() for p in points],
        "speedups": [p.speedup for p in points],
        "who": [p.username for p in points],
        "submissions": [p.submission_id for p in points],
        "profile": profile,
    }


def speedup_distribution(speedups: list[float]) -> dict[str, float] | None:
    """The speedups' summary for readers without JavaScript (the chart shows the same data)."""
    if not speedups:
        return None
    ordered = sorted(speedups)
    return {
        "n": len(ordered),
        "min": ordered[0],
        "p25": percentile(ordered, 25),
        "median": percentile(ordered, 50),
        "p75": percentile(ordered, 75),
        "max": ordered[-1],
        "faster": sum(1 for v in ordered if v > 1.0),
    }
