"""The tables of problems' rankings (``tables.Table``): one problem's ranking of solutions, and a user's best solution
on each problem."""

from __future__ import annotations

from leaderboard.rankings import metrics
from leaderboard.rankings.tables import Column, Table

NOT_TIMED_NOTE = "not computed: this profile times on a CPU, which only checks the pipeline"


def problem_ranking_table() -> Table:
    return Table(
        "ranking",
        [
            Column(
                "rank",
                "#",
                lambda e: e.rank,
                order_by="rank",
                numeric=True,
                title="position; the range beside it is what the intervals allow (1 + significantly faster rows)",
            ),
            Column("rank_range", "Rank range", lambda e: e.rank_label or None, sortable=False, shown=False),
            Column("who", "Solution by", lambda e: e.model or e.username, order_by="who_key"),
            Column("protocol", "Protocol", lambda e: e.protocol or None, order_by="protocol_key"),
            Column(
                "speedup",
                "Speedup",
                lambda e: e.speedup,
                order_by="speedup",
                numeric=True,
                title="pooled over every evaluation of this code (random-effects mean of log speedups)",
            ),
            Column("speedup_ci_low", "CI low", lambda e: e.speedup_ci_low, numeric=True, sortable=False),
            Column("speedup_ci_high", "CI high", lambda e: e.speedup_ci_high, numeric=True, sortable=False),
            Column(
                "evaluations",
                "Evaluations",
                lambda e: e.evaluations,
                order_by="evaluations",
                numeric=True,
                title="evaluations of this code (after removing comments and layout) pooled into the figure",
            ),
            Column("estimator", "Formed as", lambda e: e.estimator or None, sortable=False, shown=False),
            Column(
                "protocol_revision", "Protocol revision", lambda e: e.protocol_revision, sortable=False, shown=False
            ),
            Column("problem_version", "Problem version", lambda e: e.problem_version, sortable=False, shown=False),
            Column(
                "verification",
                "Verified",
                lambda e: e.verification.state if e.verification else None,
                sortable=False,
                title="✓: re-measured and the intervals overlap; ⚠: re-measured and they do not",
            ),
            Column(
                "remeasured_speedup",
                "Re-measured",
                lambda e: e.verification.speedup if e.verification else None,
                sortable=False,
                shown=False,
            ),
            Column("pipeline_check", "Pipeline check", lambda e: e.pipeline_check, sortable=False, shown=False),
            Column(
                "solution_median_us",
                "Solution median (µs)",
                lambda e: e.solution_median_us,
                order_by="solution_median_us",
                numeric=True,
            ),
            Column(
                "baseline_median_us",
                "Baseline median (µs)",
                lambda e: e.baseline_median_us,
                order_by="baseline_median_us",
                numeric=True,
            ),
            Column(
                "roofline_fraction",
                "Roofline",
                lambda e: e.roofline_fraction,
                order_by="roofline_fraction",
                numeric=True,
            ),
            Column("submitted", "Submitted", lambda e: e.submitted_at, order_by="submitted_at", numeric=True),
        ],
        default_sort="rank",
        extra=lambda e: {
            "username": e.username,
            "submission_id": e.submission_id,
            "model_run_id": e.model_run_id,
            "speedup_note": None if e.timed else NOT_TIMED_NOTE,
        },
    )


def best_solutions_table(*, prefix: str = "sol_") -> Table:
    return Table(
        "solutions",
        [
            Column("problem", "Problem", lambda s: s.problem_id),
            Column("profile", "Hardware", lambda s: s.profile),
            Column("speedup", "Best speedup", lambda s: metrics.speed_or_none(s.profile, s.speedup), numeric=True),
            Column(
                "roofline_fraction",
                "Roofline",
                lambda s: metrics.speed_or_none(s.profile, s.roofline_fraction),
                numeric=True,
            ),
            Column("submitted", "Submitted", lambda s: s.submitted_at, numeric=True),
            Column("submission", "Submission", lambda s: s.submission_id, numeric=True),
        ],
        default_sort="problem",
        prefix=prefix,
        extra=lambda s: {"speedup_note": metrics.speed_note(s.profile)},
    )
