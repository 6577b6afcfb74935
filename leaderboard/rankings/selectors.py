"""The reads of problems' rankings, for the page, the export and the API alike: ``problem_ranking`` (one problem on
one profile, for a version and timing protocol revision chosen by ``problem_measurement``), a problem's evaluations,
speedups and baseline, and a user's best solutions. Model runs are read by ``run_selectors``."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Iterable

from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import Count, Q, QuerySet
from django.http import Http404

from evaluator.contract.profiles import PROFILES
from evaluator.contract.result import TIMING_PROTOCOL_REVISION, Verdict
from leaderboard.beyond_contract import roofline
from leaderboard.models import MeasuredBaseline, MeasuredRoofline, Problem, ProblemStanding, Result, Submission
from leaderboard.rankings import metrics, prepared, solutions
from leaderboard.rankings.solutions import RankingEntry  # noqa: F401  (the ranking's row; re-exported)
from leaderboard.rankings.user_solutions import BestSolution, user_best_solutions  # noqa: F401  (re-exported)


@dataclass(frozen=True)
class RankingChoice:
    """A (problem version, timing protocol revision) some passed evaluation of the problem on the profile has: a
    ranking never mixes two; the default is the current one."""

    problem_version: int | None
    protocol_revision: int | None
    evaluations: int

    @property
    def label(self) -> str:
        revision = f"protocol revision {self.protocol_revision}" if self.protocol_revision else "revision not recorded"
        return f"version {self.problem_version} · {revision}"


def passed_results(problem: Problem, profile: str) -> QuerySet[Result]:
    """Passed evaluations of the problem on the profile, re-measurements left out (they verify, never rank)."""
    return Result.objects.filter(
        verdict=Verdict.PASSED.value,
        submission__problem=problem,
        submission__profile=profile,
        submission__remeasure_of__isnull=True,
    )


def problem_ranking_choices(*, problem: Problem, profile: str) -> list[RankingChoice]:
    """The problem versions and protocol revisions the problem's passed evaluations on ``profile`` were measured
    under, newest first (one query)."""
    rows = (
        passed_results(problem, profile)
        .order_by()
        .values_list("problem_version", "protocol_revision")
        .annotate(n=Count("pk"))
    )
    choices = [RankingChoice(v, r, n) for v, r, n in rows]
    return sorted(choices, key=lambda c: (c.problem_version or 0, c.protocol_revision or 0), reverse=True)


def problem_ranking_default(*, problem: Problem, choices: list[RankingChoice]) -> tuple[int, int | None]:
    """The ranking shown by default: the problem's current version, under the evaluator's current protocol
    revision when anything was measured under it, else the newest revision measured on that version."""
    revisions = [c.protocol_revision for c in choices if c.problem_version == problem.version]
    if TIMING_PROTOCOL_REVISION in revisions or not revisions:
        return problem.version, TIMING_PROTOCOL_REVISION
    return problem.version, max(revisions, key=lambda r: r or 0)


@dataclass(frozen=True)
class StoredStanding:
    """One (problem version, protocol revision) of a problem's ranking on a profile as its ``ProblemStanding`` keeps
    it (a version or revision not recorded is None, as in the results)."""

    problem_version: int | None
    protocol_revision: int | None
    passed: int  # passed evaluations, re-measurements left out: the choice's ``evaluations``
    solutions: int  # rows of the ranking
    history: list[list[Any]]  # the best speedup over time (``overview.history_record``)
    speedups: list[float]  # every passed evaluation's, ascending (``problem_speedups``)


def problem_standings(*, problem: Problem, profile: str) -> list[StoredStanding]:
    """Every stored standing of the problem on ``profile``: one per version and revision some passed evaluation has
    (one query, a handful of rows)."""
    rows = prepared.rows(
        ("problem-standings", problem.pk, profile),
        lambda: ProblemStanding.objects.filter(problem=problem, profile=profile).values_list(
            "problem_version", "protocol_revision", "passed", "solutions", "history", "speedups"
        ),
    )
    return [StoredStanding(v or None, r or None, *rest) for v, r, *rest in rows]


def stored_ranking_choices(standings: list[StoredStanding]) -> list[RankingChoice]:
    """``problem_ranking_choices`` read from the stored standings (each counts the passed evaluations of its version
    and revision; none is kept without one), in the same order."""
    choices = [RankingChoice(s.problem_version, s.protocol_revision, s.passed) for s in standings]
    return sorted(choices, key=lambda c: (c.problem_version or 0, c.protocol_revision or 0), reverse=True)


@dataclass(frozen=True)
class Measurement:
    """Which evaluations a problem page ranks: one problem version and one protocol revision (``?version=``,
    ``?revision=``; default: ``problem_ranking_default``), the choices there are, and whether the profile measures
    speed at all (CPU: verdicts only). ``solutions``: the rows of that ranking; ``speedups``: its evaluations' speedups
    (``problem_speedups``); ``default_history``: the best speedup over time of the default ranking
    (``overview.history_record``); all as stored at ingest."""

    version: int
    revision: int | None
    choices: list[RankingChoice]
    timed: bool
    current_revision: int = TIMING_PROTOCOL_REVISION
    solutions: int = 0
    default_history: list[list[Any]] = dataclass_field(default_factory=list)
    speedups: list[float] = dataclass_field(default_factory=list)

    @property
    def is_default(self) -> bool:
        return not self.choices or (self.choices[0].problem_version, self.choices[0].protocol_revision) == (
            self.version,
            self.revision,
        )


def problem_measurement(*, problem: Problem, profile: str | None, query=None) -> Measurement:
    """The version and revision a problem page shows, from its query string (values no evaluation has are ignored;
    ``revision=none`` picks results that recorded none), read from the stored standings (one query)."""
    query = query or {}
    if not profile:
        return Measurement(problem.version, TIMING_PROTOCOL_REVISION, [], False)
    standings = problem_standings(problem=problem, profile=profile)
    choices = stored_ranking_choices(standings)
    version, revision = default = problem_ranking_default(problem=problem, choices=choices)
    wanted_version, wanted_revision = query.get("version"), query.get("revision")
    if wanted_version is not None or wanted_revision is not None:
        for c in choices:
            if str(c.problem_version) == str(wanted_version or version) and (
                wanted_revision is None or str(c.protocol_revision).lower() == str(wanted_revision).lower()
            ):
                version, revision = c.problem_version, c.protocol_revision
                break
    stored = {(s.problem_version, s.protocol_revision): s for s in standings}
    # (the stored rows of a ranking whose version is not recorded are read as the problem's version's, as
    # ``ranking_rows.problem_ranking_rows`` reads them)
    shown = stored.get((problem.version if version is None else version, revision))
    first = stored.get(default)
    return Measurement(
        version,
        revision,
        choices,
        metrics.measures_speed(profile),
        solutions=shown.solutions if shown and profile in PROFILES else 0,
        default_history=first.history if first and profile in PROFILES else [],
        speedups=shown.speedups if shown and metrics.measures_speed(profile) else [],
    )


def problem_ranking(
    *,
    problem: Problem,
    profile: str,
    published: bool = False,
    version: int | None = None,
    revision: int | None | str = "default",
) -> list[RankingEntry]:
    """The ranking of distinct solutions of ``problem`` on ``profile`` (``rankings.solutions``): each entrant's
    best distinct solution, repeats pooled, fastest first, rank ranges from the intervals, each row's verification
    (``published``: only solutions whose source is published, as such or as an attempt of a published run).

    Only results of one problem version (default: the current one) and one timing protocol revision (default:
    ``problem_ranking_default``) are ranked together. Two queries (evaluations, re-measurements), plus one for the
    default revision.
    """
    if profile not in PROFILES:
        return []
    if revision == "default":
        _, revision = problem_ranking_default(
            problem=problem, choices=problem_ranking_choices(problem=problem, profile=profile)
        )
    version = problem.version if version is None else version
    evaluations, protocols = problem_evaluations(
        problem=problem, profile=profile, version=version, revision=revision, published=published
    )
    timed = metrics.measures_speed(profile)
    remeasures = []
    if timed and evaluations:
        remeasures = remeasure_rows(
            Submission.objects.filter(remeasure_of__problem=problem, remeasure_of__profile=profile)
        )
    return solutions.rank_solutions(evaluations, timed=timed, remeasures=remeasures, protocols=protocols)


def problem_evaluations(
    *, problem: Problem, profile: str, version: int, revision: int | None, published: bool = False
) -> tuple[list[dict[str, Any]], dict[int, str]]:
    """The passed evaluations ``rankings.solutions.rank_solutions`` ranks (of one version and revision; ``published``:
    only those whose source is published) and the protocol label of each model run among them (one query)."""
    results = passed_results(problem, profile).filter(problem_version=version, protocol_revision=revision)
    if published:
        results = results.filter(
            Q(submission__published_at__isnull=False) | Q(submission__model_run__published_at__isnull=False)
        )
    rows = results.values_list(
        "submission_id",
        "submission__user_id",
        "submission__user__username",
        "submission__model_run_id",
        "submission__model_run__model",
        "submission__model_run__mode",
        "submission__model_run__k",
        "submission__model_run__turn_budget",
        "submission__model_run__tokens",
        "submission__model_run__wall_time_s",
        "submission__source_key",
        "submission__sha256",
        "submission__created_at",
        "speedup",
        "speedup_ci_low",
        "speedup_ci_high",
        "baseline_median_us",
        "solution_median_us",
        "roofline_fraction",
        "protocol_revision",
        "speedup_estimator",
        "problem_version",
        "worker",
    )
    evaluations: list[dict[str, Any]] = []
    protocols: dict[int, str] = {}
    for (
        sid,
        uid,
        username,
        run_id,
        model,
        mode,
        k,
        turns,
        tokens,
        wall,
        key,
        sha,
        created,
        speedup,
        low,
        high,
        base,
        sol,
        roof,
        rev,
        estimator,
        ver,
        worker,
    ) in rows:
        if run_id and run_id not in protocols:
            protocols[run_id] = metrics.Protocol(mode, k, turns, tokens, wall).label()
        evaluations.append(
            {
                "submission_id": sid,
                "user_id": uid,
                "username": username,
                "model_run_id": run_id,
                "model": model,
                "source_key": key or sha,
                "created_at": created,
                "speedup": speedup,
                "low": low,
                "high": high,
                "baseline_us": base,
                "solution_us": sol,
                "roofline": roof,
                "revision": rev,
                "estimator": estimator,
                "version": ver,
                "worker": worker,
            }
        )
    return evaluations, protocols


def remeasure_rows(remeasures: QuerySet[Submission]) -> list[dict[str, Any]]:
    """Re-measurements among ``remeasures`` that were not cancelled, as ``rank_solutions`` reads them (one query)."""
    return _remeasure_dicts(_remeasure_values(remeasures))


def remeasures_of(submission_ids: tuple[int, ...]) -> list[dict[str, Any]]:
    """``remeasure_rows`` of the re-measurements of these submissions, the query compiled once per process for the
    same ids (``prepared.rows``: a page of a ranking asks for the same few ids until it changes)."""
    return _remeasure_dicts(
        prepared.rows(
            ("remeasures-of", submission_ids),
            lambda: _remeasure_values(Submission.objects.filter(remeasure_of_id__in=submission_ids)),
        )
    )


def _remeasure_values(remeasures: QuerySet[Submission]) -> QuerySet:
    return remeasures.exclude(state=Submission.State.CANCELLED).values_list(
        "remeasure_of_id",
        "pk",
        "result__verdict",
        "result__speedup",
        "result__speedup_ci_low",
        "result__speedup_ci_high",
        "result__worker",
    )


def _remeasure_dicts(rows: Iterable[tuple[Any, ...]]) -> list[dict[str, Any]]:
    return [
        {
            "remeasure_of": of,
            "submission_id": sid,
            "verdict": verdict,
            "speedup": speedup,
            "low": low,
            "high": high,
            "worker": worker,
        }
        for of, sid, verdict, speedup, low, high, worker in rows
    ]


# --- problem page figures -------------------------------------------------------------------------------


def problem_speedups(
    *, problem: Problem, profile: str, version: int | None = None, revision: int | None | str = "default"
) -> list[float]:
    """Every passed attempt's speedup on the problem's current version, the current protocol revision and this
    profile (solo submissions and model-run attempts alike, re-measurements left out): the distribution chart's
    data. Empty on a profile that does not measure speed (its timings are pipeline checks)."""
    if not metrics.measures_speed(profile):
        return []
    if revision == "default":
        _, revision = problem_ranking_default(
            problem=problem, choices=problem_ranking_choices(problem=problem, profile=profile)
        )
    return list(
        passed_results(problem, profile)
        .filter(
            problem_version=problem.version if version is None else version,
            speedup__isnull=False,
            protocol_revision=revision,
        )
        .order_by("speedup")
        .values_list("speedup", flat=True)
    )


@dataclass(frozen=True)
class Baseline:
    median_us: float | None  # the median over evaluations of the baseline's median time
    evaluations: int
    roofline_us: float | None
    roofline_bound: str | None


def baseline_timings(*, problem_id: str, profile: str, version: int) -> tuple[int, float | None]:
    """How many evaluations of the problem's ``version`` on ``profile`` timed the baseline (any verdict,
    re-measurements too) and the median of their medians, from the results (one query): what
    ``stored_figures.measured_baseline_after_result`` keeps at ingest (``MeasuredBaseline``)."""
    timed = Result.objects.filter(
        submission__problem_id=problem_id,
        submission__profile=profile,
        problem_version=version,
        baseline_median_us__isnull=False,
    )
    return _median_of(timed, "baseline_median_us")


def problem_baseline(*, problem: Problem, profile: str) -> Baseline:
    """The baseline's time on this profile (every evaluation times it beside the solution), as kept at ingest
    (``MeasuredBaseline``: ``baseline_timings`` of the problem's version), and the roofline."""
    # (each read compiled once per process for the problem, profile and version: ``prepared.rows``; ``.first()``'s)
    key = (problem.pk, profile, problem.version)
    stored = prepared.first(
        ("baseline", key),
        lambda: MeasuredBaseline.objects.filter(
            problem=problem, profile=profile, problem_version=problem.version
        ).values_list("evaluations", "median_us"),
    )
    evaluations, median = stored if stored is not None else (0, None)
    roofline_us, bound = _roofline(problem, profile)
    if roofline_us is None and evaluations:  # not computable here (e.g. an imported or demo problem): as evaluated
        # the newest evaluation's of this version on the profile, kept at ingest (``MeasuredRoofline``)
        measured = prepared.first(
            ("roofline", key),
            lambda: MeasuredRoofline.objects.filter(
                problem=problem, profile=profile, problem_version=problem.version
            ).values_list("time_us", "bound"),
        )
        if measured and isinstance(measured[0], (int, float)):
            roofline_us, bound = float(measured[0]), str(measured[1] or "") or None
    return Baseline(median_us=median, evaluations=evaluations, roofline_us=roofline_us, roofline_bound=bound)


def _median_of(rows: QuerySet, field: str) -> tuple[int, float | None]:
    """How many of ``rows`` there are and ``statistics.median`` of their ``field`` (no row may hold None there), in
    one query: on PostgreSQL only the one or two middle values come back (every evaluation of a problem timed its
    baseline: thousands of rows at 1,000 runs); elsewhere every value is read."""
    if connection.vendor != "postgresql":
        values = list(rows.order_by(field).values_list(field, flat=True))
        return len(values), (statistics.median(values) if values else None)
    try:
        sql, params = rows.order_by().values_list(field).query.sql_with_params()
    except EmptyResultSet:  # a filter that can match nothing (e.g. in an empty list)
        return 0, None
    with connection.cursor() as cursor:
        # 1-based bounds of the middle: ((n + 1) / 2 .. n / 2 + 1), one value for n odd, two for n even
        cursor.execute(
            "SELECT count(*), (array_agg(v ORDER BY v))[(count(*) + 1) / 2 : count(*) / 2 + 1] "
            f"FROM ({sql}) AS timed(v)",
            params,
        )
        n, middle = cursor.fetchone()
    return n, (statistics.median(middle) if n else None)


def _roofline(problem: Problem, profile: str) -> tuple[float | None, str | None]:
    if problem.suite != "arena" or profile not in PROFILES:
        return None, None
    try:
        from problems.registry import get

        spec = get(problem.id)
        if spec.version != problem.version:
            return None, None
        figure = roofline(spec, PROFILES[profile], PROFILES[profile].world_size)
    except Exception:  # a folder that changed under a running site: show no roofline rather than fail the page
        return None, None
    return figure["time_us"], figure["bound"]


# --- users ----------------------------------------------------------------------------------------------


def user_by_username(*, username: str):
    from django.contrib.auth import get_user_model

    user = get_user_model()
    found = prepared.get(user, username=username)  # (as get_object_or_404 reads it, compiled once per username)
    if found is None:
        raise Http404(f"No {user._meta.object_name} matches the given query.")
    return found
