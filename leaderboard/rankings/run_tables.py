"""The tables of model runs (``tables.Table``): the overall ranking, a run's problems, attempts and categories, and the
comparison of two runs. Their columns are the one definition of their sort keys and exported fields, for the pages,
the exports and the API alike."""

from __future__ import annotations

from typing import Any, Callable

from leaderboard.rankings import metrics, scores, significance
from leaderboard.rankings.tables import Column, Table

# --- the site's tables ----------------------------------------------------------------------------------
#
# Scores are exported as plain fractions (0.5, not "50 %") with every digit; each exported row of a model run
# carries its protocol beside its scores.


def _score(name: str) -> Callable[[Any], Any]:
    def get(run: Any) -> Any:
        return getattr(getattr(run, "score", None), name, None)  # a missing RunScore reads as None

    return get


_INTERVALS = tuple(
    (f"{name}_ci", low, high)
    for name, (low, high) in (
        ("pass_at_k", ("pass_at_k_low", "pass_at_k_high")),
        ("fast_1", ("fast_1_low", "fast_1_high")),
        ("fast_1_5", ("fast_1_5_low", "fast_1_5_high")),
        ("fast_2", ("fast_2_low", "fast_2_high")),
        ("speedup", ("geomean_low", "geomean_high")),
    )
)


def _run_extra(run: Any) -> dict[str, Any]:
    score = getattr(run, "score", None)  # a missing RunScore reads as None

    def of(name: str) -> Any:
        return getattr(score, name, None)

    return {
        **scores.protocol_fields(run),
        "scored_at_k": of("k"),
        "provider": run.provider,
        "open_weights": run.open_weights,
        "suite": run.suite,
        "state": run.state,
        "attempts_done": run.attempts_done,
        "attempts_total": run.attempts_total,
        "problems_scored": of("problems_scored"),
        "problems_not_scorable": of("problems_not_scorable"),
        "problems_not_attempted": of("problems_not_attempted"),
        "is_demo": run.is_demo,
        "status": of("status") or "unfinished",
        "suite_version": run.suite_version,
        "timed": of("timed"),
        "speedup_note": metrics.speed_note(run.profile),
        "protocol_revision": of("protocol_revision"),
        **{key: [of(low), of(high)] for key, low, high in _INTERVALS},
        "url": f"/runs/{run.pk}/",
    }


RUN_COLUMNS = [
    Column("id", "Run", lambda r: r.pk, "id", numeric=True, shown=False),
    Column(
        "rank",
        "#",
        lambda r: significance.rank_label(getattr(r, "rank_range", None)) or None,
        sortable=False,
        title="rank range: 1 + the runs significantly better (95 % interval wholly above) .. N - those "
        "significantly worse; unfinished and partial runs get none",
    ),
    Column("model", "Model", lambda r: r.model, "model"),
    Column("user", "By", lambda r: r.user.get_username(), "user__username", shown=False),
    Column("profile", "Hardware", lambda r: r.profile, "profile"),
    Column("precision", "Precision", lambda r: r.precision or None, "precision", shown=False),
    Column(
        "protocol",
        "Protocol",
        lambda r: scores.protocol(r)["label"],
        sortable=False,
        title="how the attempts were produced; every score on the row was obtained this way",
    ),
    Column("k", "k", lambda r: r.k, "k", numeric=True, title="attempts per problem"),
    Column(
        "pass_at_k",
        "pass@k",
        _score("pass_at_k"),
        "score__pass_at_k",
        numeric=True,
        title="unbiased pass@k at the run's own k, mean over scorable problems",
    ),
    Column(
        "pass_at_1",
        "pass@1",
        _score("pass_at_1"),
        "score__pass_at_1",
        numeric=True,
        title="pass@1 estimated from the same k attempts: comparable across runs with different k",
    ),
    *[
        Column(
            metrics.interval_key(p),
            metrics.fast_p_label(p),
            _score(metrics.fast_p_field(p)),
            f"score__{metrics.fast_p_field(p)}",
            numeric=True,
            title="correct and faster than the PyTorch + NCCL baseline, at k"
            if p == 1.0
            else f"correct and more than {p:g}× faster than the baseline, at k",
        )
        for p in metrics.FAST_P_THRESHOLDS
    ],
    Column(
        "speedup",
        "Geomean",
        _score("geomean_speedup"),
        "score__geomean_speedup",
        numeric=True,
        title="geometric-mean speedup over every correct, timed attempt",
    ),
    Column(
        "roofline",
        "Roofline",
        _score("mean_roofline_fraction"),
        "score__mean_roofline_fraction",
        numeric=True,
        title="mean fraction of the roofline reached by correct attempts",
    ),
    Column(
        "coverage",
        "Coverage",
        _score("coverage"),
        "score__coverage",
        numeric=True,
        title="scorable problems / problems of the suite on this hardware",
    ),
    Column(
        "progress",
        "Done",
        lambda r: f"{r.attempts_done}/{r.attempts_total}",
        sortable=False,
        title="attempts evaluated / attempts uploaded",
    ),
    Column("created", "Uploaded", lambda r: r.created_at, "created_at", numeric=True),
    Column("tokens", "Tokens", lambda r: r.tokens, "tokens", numeric=True, shown=False, exported=False),
    Column("wall_time", "Wall time", lambda r: r.wall_time_s, "wall_time_s", numeric=True, shown=False, exported=False),
]


RUN_DEFAULT_SORT = "-pass_at_k"


UNRANKED_PER_PAGE = 20  # runs not ranked listed a page below the ranking (unfinished, partial, other version)


def run_ranking_table(*, prefix: str = "", name: str = "runs", per_page: int = 50) -> Table:
    """The overall ranking of model runs: its columns are the one definition of its sort keys (page and API)."""
    return Table(
        name,
        RUN_COLUMNS,
        default_sort=RUN_DEFAULT_SORT,
        prefix=prefix,
        extra=_run_extra,
        per_page=per_page,
        row_key=_run_read,
    )


def _run_read(run: Any) -> Any:
    """Everything a run's exported record is built from: the run as read (``run_rows.RunRow.read``) and its rank
    range; None for a run that does not say how it was read (a model instance)."""
    read = getattr(run, "read", None)
    return None if read is None else (read, getattr(run, "rank_range", None))


def _ps(name: str, p: float | None = None) -> Callable[[Any], Any]:
    """A field of a row's ProblemScore (``row.score``)."""

    def get(row: Any) -> Any:
        value = getattr(row.score, name)
        return value.get(p) if p is not None else value

    return get


def run_problems_table() -> Table:
    """The run page's grid: one row per attempted problem with its per-problem scores."""
    return Table(
        "problems",
        [
            Column("problem", "Problem", lambda r: r.problem_id),
            Column("category", "Category", lambda r: r.category),
            Column("n", "n", _ps("n"), numeric=True, title="attempts counted (infra errors and unfinished left out)"),
            Column("c", "correct", _ps("c"), numeric=True),
            Column("pass_at_k", "pass@k", _ps("pass_at_k"), numeric=True),
            *[
                Column(metrics.interval_key(p), metrics.fast_p_label(p), _ps("fast_p_at_k", p), numeric=True)
                for p in metrics.FAST_P_THRESHOLDS
            ],
            Column("best_speedup", "Best speedup", _ps("best_speedup"), numeric=True),
            Column("geomean_speedup", "Geomean speedup", _ps("geomean_speedup"), numeric=True),
            Column("roofline", "Roofline", _ps("mean_roofline_fraction"), numeric=True),
        ],
        default_sort="category",
        per_page=100,
    )


def run_attempts_table(*, profile: str = "") -> Table:
    """A run's attempts; on a profile that does not measure speed (``profile``: the run's) their speedups and
    roofline fractions are null with a note saying why, as the page says "not computed"."""
    timed = metrics.measures_speed(profile) if profile else True
    note = metrics.speed_note(profile) if profile else None
    return Table(
        "attempts",
        [
            Column("problem", "Problem", lambda a: a.problem_id),
            Column("category", "Category", lambda a: a.category),
            Column("attempt", "Attempt", lambda a: a.attempt, numeric=True),
            Column("state", "State", lambda a: a.state),
            Column("verdict", "Verdict", lambda a: a.verdict),
            Column("speedup", "Speedup", lambda a: a.speedup if timed else None, numeric=True),
            Column("roofline_fraction", "Roofline", lambda a: a.roofline_fraction if timed else None, numeric=True),
            Column("solution_median_us", "Solution median (µs)", lambda a: a.solution_median_us, numeric=True),
            Column("baseline_median_us", "Baseline median (µs)", lambda a: a.baseline_median_us, numeric=True),
            Column("submission", "Submission", lambda a: a.submission_id, numeric=True),
        ],
        default_sort="problem",
        per_page=500,
        extra=lambda a: {"speedup_note": note},
    )


def _agg(name: str, p: float | None = None) -> Callable[[Any], Any]:
    def get(row: Any) -> Any:
        value = getattr(row[1], name)
        return value.get(p) if p is not None else value

    return get


def run_categories_table() -> Table:
    """Rows are (category, metrics.Aggregate) pairs."""
    return Table(
        "categories",
        [
            Column("category", "Category", lambda r: r[0]),
            Column("problems", "Scored problems", _agg("problems"), numeric=True),
            Column("pass_at_k", "pass@k", _agg("mean_pass_at_k"), numeric=True),
            *[
                Column(metrics.interval_key(p), metrics.fast_p_label(p), _agg("mean_fast_p_at_k", p), numeric=True)
                for p in metrics.FAST_P_THRESHOLDS
            ],
            Column("speedup", "Geomean speedup", _agg("geomean_speedup"), numeric=True),
            Column("roofline", "Roofline", _agg("mean_roofline_fraction"), numeric=True),
            Column("coverage", "Coverage", _agg("coverage"), numeric=True),
        ],
        default_sort="category",
        per_page=100,
    )


def comparison_table() -> Table:
    """Rows are comparison.ComparisonRow: one problem, both runs' scores at the common k."""

    def side(which: str, name: str, p: float | None = None) -> Callable[[Any], Any]:
        def get(row: Any) -> Any:
            score = getattr(row, which)
            if score is None:
                return None
            value = getattr(score, name)
            return value.get(p) if p is not None else value

        return get

    return Table(
        "problems",
        [
            Column("problem", "Problem", lambda r: r.problem_id),
            Column("category", "Category", lambda r: r.category),
            Column("a_pass_at_k", "A pass@k", side("a", "pass_at_k"), numeric=True),
            Column("b_pass_at_k", "B pass@k", side("b", "pass_at_k"), numeric=True),
            Column("a_fast_1", "A fast₁@k", side("a", "fast_p_at_k", 1.0), numeric=True),
            Column("b_fast_1", "B fast₁@k", side("b", "fast_p_at_k", 1.0), numeric=True),
            Column("a_best_speedup", "A best speedup", side("a", "best_speedup"), numeric=True),
            Column("b_best_speedup", "B best speedup", side("b", "best_speedup"), numeric=True),
            Column(
                "ratio",
                "B / A",
                lambda r: r.speedup_ratio,
                numeric=True,
                title="B's geomean speedup over A's on this problem (each over its correct timed attempts)",
            ),
        ],
        default_sort="category",
        per_page=100,
    )
