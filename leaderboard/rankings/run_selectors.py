"""The reads of model runs, for the pages, the exports and the API alike: one run and its attempts, ``model_run_score``
(the one place a run's scores are computed), its grid of problems, ``model_run_ranking`` (every run, filtered and
sorted) and the runs a comparison may pick. Whether a run is ranked and its rank range are ``standing``'s."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Hashable, Iterable

from django.db import connection
from django.db.models import F, Q, QuerySet
from django.http import Http404

from evaluator.contract import states
from evaluator.contract.profiles import PROFILES
from leaderboard.models import ModelRun, Problem, RunFilterChoice, RunScore, Submission
from leaderboard.rankings import metrics, prepared, run_tables
from leaderboard.rankings.filters import RunFilterChoices, RunFilterSet
from leaderboard.rankings.standing import (  # noqa: F401  (a run's standing; re-exported for the web side)
    ALL,
    RANKED,
    UNRANKED,
    current_suite_version,
    model_run_rank_ranges,
    model_run_page_standing,
    ranked_count_and_ends,
    model_run_standing_counts,
    set_rank_ranges,
    model_run_status,
    rank_metric,
)

# --- model runs -----------------------------------------------------------------------------------------
#
# A model run's scores are computed in one place, ``model_run_score``, from its attempts as loaded by
# ``model_run_attempts``: the service that stores RunScore rows, the run page, the comparison and the API all
# call it, and ``leaderboard.metrics`` does the arithmetic.


@dataclass(frozen=True)
class AttemptRow:
    """One attempt of a model run with what its result says (None while it is not evaluated)."""

    submission_id: int
    problem_id: str
    problem_title: str
    category: str
    attempt: int
    state: str
    verdict: str | None
    speedup: float | None
    roofline_fraction: float | None
    solution_median_us: float | None
    baseline_median_us: float | None
    speedup_ci_low: float | None = None
    speedup_ci_high: float | None = None
    protocol_revision: int | None = None

    @property
    def is_done(self) -> bool:
        return states.is_done(self.state)

    @property
    def is_final(self) -> bool:
        """It has a final verdict (an attempt cancelled before its evaluation has none)."""
        return self.state == Submission.State.FINISHED and self.verdict is not None


def model_run_detail(*, run_id: int) -> ModelRun:
    """The run ``run_id`` with its owner and its stored score (Http404: no such run), as
    ``ModelRun.objects.select_related("user", "score").get(pk=run_id)`` reads them, in one query compiled once per
    process for each run (``prepared``): compiling the three tables' hundred-odd columns and building the queryset
    were about a fifth of a run page's CPU."""
    found = prepared.rows(
        ("run-detail", run_id),
        lambda: ModelRun.objects.filter(pk=run_id).order_by().values_list(*_DETAIL.names),
    )
    if not found:
        raise Http404(f"No {ModelRun._meta.object_name} matches the given query.")
    return _DETAIL.instances(found[0])


def model_run_pair(*, a_id: int, b_id: int) -> tuple[ModelRun, ModelRun]:
    """Runs ``a_id`` and ``b_id`` as ``model_run_detail`` reads them, in one query (Http404, as it raises, when either
    does not exist), without their stored scores' per-category breakdown and whole detail (some 15 KB of JSON a run,
    deferred as ``.defer()`` leaves them): a comparison reads its own stored record, and of each score only its
    columns. Compiled once per process for each pair, as ``model_run_detail`` is."""
    found = prepared.rows(
        ("run-pair", a_id, b_id),
        lambda: ModelRun.objects.filter(pk__in=[a_id, b_id]).order_by().values_list(*_PAIR.names),
    )
    runs = {run.pk: run for run in map(_PAIR.instances, found)}
    if a_id not in runs or b_id not in runs:
        raise Http404(f"No {ModelRun._meta.object_name} matches the given query.")
    return runs[a_id], runs[b_id]


class _RunWithOwnerAndScore:
    """How a run, its owner and its stored score are read in one row (``names``, for ``values_list``) and made the
    instances ``select_related("user", "score")`` makes (``instances``): the run, its owner cached as ``run.user``,
    its score (None: none stored, so ``run.score`` raises as it does) as ``run.score``, the score's fields in
    ``deferred`` left deferred."""

    def __init__(self, deferred: tuple[str, ...] = ()) -> None:
        self.user_model = ModelRun._meta.get_field("user").related_model
        user_fields = self.user_model._meta.concrete_fields  # type: ignore[union-attr]
        score_fields = [f for f in RunScore._meta.concrete_fields if f.name not in deferred]
        self.run_attnames = tuple(f.attname for f in ModelRun._meta.concrete_fields)
        self.user_attnames = tuple(f.attname for f in user_fields)
        self.score_attnames = tuple(f.attname for f in score_fields)
        # (a related row's fields by name through its join; the score's primary key, the run's id, is null when the
        # run has no score)
        self.names = (
            *self.run_attnames,
            *(f"user__{f.name}" for f in user_fields),
            *(f"score__{f.name}" for f in score_fields),
        )
        self._user_at = len(self.run_attnames)
        self._score_at = self._user_at + len(self.user_attnames)
        self._score_pk = self._score_at + self.score_attnames.index("model_run_id")

    def instances(self, row: tuple[Any, ...]) -> ModelRun:
        alias = connection.alias
        run = ModelRun.from_db(alias, self.run_attnames, row[: self._user_at])
        user = self.user_model.from_db(  # type: ignore[union-attr]
            alias, self.user_attnames, row[self._user_at : self._score_at]
        )
        score = None
        if row[self._score_pk] is not None:
            score = RunScore.from_db(alias, self.score_attnames, row[self._score_at :])
            score._state.fields_cache["model_run"] = run
        run._state.fields_cache["user"] = user
        run._state.fields_cache["score"] = score
        return run


_DETAIL = _RunWithOwnerAndScore()
_PAIR = _RunWithOwnerAndScore(deferred=("by_category", "detail"))


def model_run_attempts(*, run: ModelRun) -> list[AttemptRow]:
    """Every attempt of the run, by category, problem and attempt number: one query."""
    # (compiled once per process for each run: ``prepared``)
    rows = prepared.rows(
        ("run-attempts", run.pk),
        lambda: (
            Submission.objects.filter(model_run_id=run.pk)
            .order_by("problem__category", "problem_id", "attempt")
            .values_list(
                "pk",
                "problem_id",
                "problem__title",
                "problem__category",
                "attempt",
                "state",
                "verdict",
                "result__speedup",
                "result__roofline_fraction",
                "result__solution_median_us",
                "result__baseline_median_us",
                "result__speedup_ci_low",
                "result__speedup_ci_high",
                "result__protocol_revision",
            )
        ),
    )
    return [AttemptRow(*row) for row in rows]


def model_run_suite(*, run: ModelRun) -> dict[str, str]:
    """The problems the run could have attempted (problem id -> category): the active problems of its suite that
    run on its hardware profile. Problems it skipped count against its coverage (one query)."""
    world_size = PROFILES[run.profile].world_size if run.profile in PROFILES else None
    return {
        pid: category
        for pid, category, sizes in Problem.objects.filter(is_active=True, suite=run.suite).values_list(
            "id", "category", "world_sizes"
        )
        if world_size in (sizes or [])
    }


def _scorable(value: float | None) -> float | None:
    return value if isinstance(value, (int, float)) and value > 0 and math.isfinite(value) else None


def attempts_for_scoring(attempts: list[AttemptRow], *, timed: bool = True) -> list[metrics.Attempt]:
    """Attempts as ``leaderboard.metrics`` takes them: an attempt not finished yet has no verdict; on a profile
    that does not measure speed (``timed`` False) no timing is passed on."""
    return [
        metrics.Attempt(
            problem_id=a.problem_id,
            category=a.category,
            verdict=a.verdict if a.state == Submission.State.FINISHED else None,
            speedup=_scorable(a.speedup) if timed else None,
            roofline_fraction=_scorable(a.roofline_fraction) if timed else None,
            speedup_ci_low=_scorable(a.speedup_ci_low) if timed else None,
        )
        for a in attempts
    ]


def model_run_score(
    *,
    run: ModelRun,
    attempts: list[AttemptRow] | None = None,
    k: int | None = None,
    suite: dict[str, str] | None = None,
    intervals: bool = True,
    thresholds: tuple[float, ...] = metrics.FAST_P_THRESHOLDS,
) -> metrics.RunScore:
    """The run scored at ``k`` (default: its protocol's k) — the one place a run's scores are computed. On a profile
    that does not measure speed no timing enters (verdicts only); ``thresholds``: the p of fast_p@k (a chart asks
    for more)."""
    attempts = model_run_attempts(run=run) if attempts is None else attempts
    suite = model_run_suite(run=run) if suite is None else suite
    timed = metrics.measures_speed(run.profile)
    return metrics.score_run(
        attempts_for_scoring(attempts, timed=timed),
        metrics.Protocol.of_run(run),
        k=k,
        suite=suite,
        timed=timed,
        intervals=intervals,
        thresholds=thresholds,
    )


@dataclass(frozen=True)
class GridRow:
    problem_id: str
    title: str
    category: str
    cells: list[AttemptRow | None]  # one per attempt number 1..k
    score: metrics.ProblemScore


def model_run_grid(*, run: ModelRun, attempts: list[AttemptRow], score: metrics.RunScore) -> list[GridRow]:
    """The problem × attempt grid: a row per attempted problem, a cell per attempt number (None if missing)."""
    by_problem: dict[str, list[AttemptRow]] = {}
    for a in attempts:
        by_problem.setdefault(a.problem_id, []).append(a)
    width = max([run.k] + [a.attempt for a in attempts if a.attempt])
    rows = []
    for pid, items in by_problem.items():
        cells: list[AttemptRow | None] = [None] * width
        for a in items:
            if a.attempt and 1 <= a.attempt <= width:
                cells[a.attempt - 1] = a
        rows.append(
            GridRow(
                problem_id=pid,
                title=items[0].problem_title,
                category=items[0].category,
                cells=cells,
                score=score.problems[pid],
            )
        )
    return rows


def _runs() -> QuerySet[ModelRun]:
    """Every model run with its precomputed RunScore, best pass@k first (then newest): the ranking's base order,
    which also breaks the ties of any other sort."""
    # The manifest, notes and per-category breakdown are big JSON/text a ranking never shows, and of the owner only
    # the name is shown: the rest is left in the database.
    return (
        ModelRun.objects.select_related("score", "user")
        .defer(
            "manifest",
            "notes",
            "score__by_category",
            "score__detail",
            "user__password",
            "user__email",
            "user__last_login",
            "user__date_joined",
            "user__first_name",
            "user__last_name",
        )
        .order_by(F("score__pass_at_k").desc(nulls_last=True), "-created_at", "-id")
    )


def model_run_filter_choices() -> RunFilterChoices:
    """The values the ranking's filters offer: those some run has, as kept when runs are saved and deleted
    (``RunFilterChoice``; one query, a handful of rows, whatever the number of runs)."""
    chosen = RunFilterChoice.objects.values_list("profile", "precision", "k")
    if connection.vendor == "postgresql":  # the same query every time: compiled once per process
        with connection.cursor() as cursor:  # (plain columns: read as values_list reads them)
            cursor.execute(*prepared.sql_with_params(chosen, "filter-choices"))
            seen = set(cursor.fetchall())
    else:
        seen = set(chosen)
    return RunFilterChoices(
        profiles=[p for p in PROFILES if any(s[0] == p for s in seen)],
        precisions=sorted({s[1] for s in seen if s[1]}),
        modes=[m.value for m in ModelRun.Mode],
        ks=sorted({s[2] for s in seen}),
    )


def model_run_filters(data=None) -> RunFilterSet:
    """The ranking's filters bound to ``data`` (a query string; None: no filter), offering the values some run has.
    The page shows ``.form`` and ignores values it does not offer; the API refuses them (``.is_valid()``)."""
    return RunFilterSet(data, queryset=_runs(), choices=model_run_filter_choices())


def ranking_key(filters: RunFilterSet | None, *parts: Hashable) -> tuple[Any, ...]:
    """What a query of the ranking is built from besides the code, for ``prepared`` to compile it once per process:
    the filters' valid values (``filters.qs``) and whatever else the caller built it with (its standing, the sort
    it asked for), each as the caller passed it."""
    return ("runs", filters.state() if filters is not None else None, *parts)


def model_run_ranking(
    *, filters: RunFilterSet | None = None, user=None, sort: str = run_tables.RUN_DEFAULT_SORT, standing: str = "all"
) -> QuerySet[ModelRun]:
    """Model runs with their precomputed RunScore, filtered (the valid values of ``filters``; ``user``: only that
    user's) and sorted by ``sort`` (a sort key of the runs table, ``-`` for descending; missing scores last). The
    ranking page, its exports, user pages and the API all read this. ``standing``: RANKED (the overall ranking:
    finished runs covering their current suite version), UNRANKED (the others, listed apart) or ALL."""
    runs = filters.qs if filters is not None else _runs()
    if user is not None:
        runs = runs.filter(user=user)
    if standing == RANKED:
        runs = runs.filter(score__status=RANKED)
    elif standing == UNRANKED:
        runs = runs.exclude(score__status=RANKED)
    return run_tables.run_ranking_table().order(runs, sort)


COMPARE_CHOICES = 100  # runs the comparison form lists (the newest); any other is compared by its number


def model_run_choices(*, include: Iterable[int] = (), limit: int | None = None) -> list[tuple[int, str]]:
    """(id, label) of the newest ``limit`` runs (default COMPARE_CHOICES), and of the runs ``include`` names that
    exist, newest first, for the comparison form: a bounded list whatever the number of runs (one query)."""
    limit = COMPARE_CHOICES if limit is None else limit
    wanted = [pk for pk in include if pk]
    newest = ModelRun.objects.order_by("-created_at", "-id").values("pk")[:limit]
    rows = (
        ModelRun.objects.filter(Q(pk__in=newest) | Q(pk__in=wanted))
        .order_by("-created_at", "-id")
        .values_list("pk", "model", "mode", "k", "profile")
    )
    return [(pk, f"#{pk} {model} ({mode}, k={k}, {profile})") for pk, model, mode, k, profile in rows]
