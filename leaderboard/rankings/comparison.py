"""Two model runs side by side, both scored at the smaller of their ks, with the paired bootstrap of their
differences (``significance.compare_scores``). The bootstrap costs a page hundreds of milliseconds, so a request only
reads what the comparison job stored (``model_run_comparison``); ``model_run_comparison_compute`` is the job's."""

from __future__ import annotations

from dataclasses import dataclass

from leaderboard.models import ModelRun, RunComparison
from leaderboard.rankings import metrics, run_selectors, scores, significance
from problems.registry import CATEGORIES


@dataclass(frozen=True)
class ComparisonRow:
    problem_id: str
    title: str
    category: str
    a: metrics.ProblemScore | None
    b: metrics.ProblemScore | None

    @property
    def speedup_ratio(self) -> float | None:
        """b's geomean speedup over a's on this problem (over each run's correct timed attempts, not its luckiest
        one), when both have one."""
        if self.a and self.b and self.a.geomean_speedup and self.b.geomean_speedup:
            return self.b.geomean_speedup / self.a.geomean_speedup
        return None


@dataclass(frozen=True)
class Comparison:
    a: ModelRun
    b: ModelRun
    k: int  # both runs are scored at this k, the smaller of their two, so the figures compare like with like
    a_score: metrics.RunScore
    b_score: metrics.RunScore
    rows: list[ComparisonRow]
    categories: list[str]
    differences: list[significance.Difference] = ()  # B - A per figure with its paired interval over common problems

    @property
    def any_significant(self) -> bool:
        return any(d.significant for d in self.differences)


def model_run_comparison_compute(*, a: ModelRun, b: ModelRun) -> Comparison:
    """Two runs side by side, both scored at the smaller of their ks (a run that drew more samples would
    otherwise look better for it), with the paired bootstrap of their differences. Costly (a bootstrap per figure):
    only the comparison job calls it (``services.run_comparison_refresh``); pages read ``model_run_comparison``."""
    k = min(a.k, b.k)
    a_attempts, b_attempts = run_selectors.model_run_attempts(run=a), run_selectors.model_run_attempts(run=b)
    # As stored at ingest when a run is compared at its own k; a run with the larger k is scored here at the other's.
    a_score = scores.stored_score(a, k) or run_selectors.model_run_score(run=a, attempts=a_attempts, k=k)
    b_score = scores.stored_score(b, k) or run_selectors.model_run_score(run=b, attempts=b_attempts, k=k)
    titles = {x.problem_id: (x.problem_title, x.category) for x in a_attempts + b_attempts}
    return _comparison(a, b, k, a_score, b_score, significance.compare_scores(a_score, b_score), titles)


def _comparison(
    a: ModelRun,
    b: ModelRun,
    k: int,
    a_score: metrics.RunScore,
    b_score: metrics.RunScore,
    differences: list[significance.Difference],
    titles: dict[str, tuple[str, str]],
) -> Comparison:
    rows = [
        ComparisonRow(
            problem_id=pid,
            title=titles[pid][0],
            category=titles[pid][1],
            a=a_score.problems.get(pid),
            b=b_score.problems.get(pid),
        )
        for pid in sorted(titles, key=lambda p: (titles[p][1], p))
    ]
    categories = sorted(
        set(a_score.by_category) | set(b_score.by_category),
        key=lambda c: (list(CATEGORIES).index(c) if c in CATEGORIES else len(CATEGORIES), c),
    )
    return Comparison(
        a=a, b=b, k=k, a_score=a_score, b_score=b_score, rows=rows, categories=categories, differences=differences
    )


def model_run_scored_at(run: ModelRun):
    """When the run's stored score was last written (its RunScore's ``updated_at``; None before its first): what a
    stored comparison must have been computed from to be current."""
    return getattr(getattr(run, "score", None), "updated_at", None)


def model_run_comparison(*, a: ModelRun, b: ModelRun) -> Comparison | None:
    """Two runs side by side as the comparison job stored them (``RunComparison``, one query), or None while it is
    not computed for their current scores: the caller asks for it (``services.run_comparison_request``) and says
    so. ``a`` and ``b`` come with their RunScore (``model_run_detail``)."""
    row = RunComparison.objects.filter(a=a, b=b).values_list("a_scored_at", "b_scored_at", "record").first()
    if row is None or (row[0], row[1]) != (model_run_scored_at(a), model_run_scored_at(b)) or not row[2]:
        return None
    a_score, b_score, differences, titles = scores.comparison_of(row[2], a, b)
    return _comparison(a, b, row[2]["k"], a_score, b_score, differences, titles)
