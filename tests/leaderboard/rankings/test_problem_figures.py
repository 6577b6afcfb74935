"""A problem page's figures read without every evaluation: the baseline's median comes back as the median of every
evaluation's baseline (``statistics.median`` of all of them: odd and even counts, one, none), and the page shows it."""

from __future__ import annotations

import statistics

import pytest

from leaderboard.management.commands.seed_demo import seed_demo
from leaderboard.models import Problem, Result
from leaderboard.rankings import selectors

pytestmark = pytest.mark.django_db


def test_the_median_of_a_problems_baselines_is_that_of_every_evaluation(client):
    seed_demo(runs=10, problems=4, attempts=3, users=3, seed=4, log=lambda _: None)
    timed = Result.objects.filter(baseline_median_us__isnull=False).order_by("pk")
    pks = list(timed.values_list("pk", flat=True))
    assert len(pks) > 20
    for count in (0, 1, 2, 3, 10, 11, len(pks)):
        rows = Result.objects.filter(pk__in=pks[:count], baseline_median_us__isnull=False)
        values = list(rows.values_list("baseline_median_us", flat=True))
        assert selectors._median_of(rows, "baseline_median_us") == (
            count,
            statistics.median(values) if values else None,
        )
    checked = 0
    for problem in Problem.objects.filter(suite="demo"):
        for profile in problem.supported_profiles:
            values = list(
                Result.objects.filter(
                    submission__problem=problem,
                    submission__profile=profile,
                    problem_version=problem.version,
                    baseline_median_us__isnull=False,
                ).values_list("baseline_median_us", flat=True)
            )
            baseline = selectors.problem_baseline(problem=problem, profile=profile)
            assert (baseline.evaluations, baseline.median_us) == (
                len(values),
                statistics.median(values) if values else None,
            )
            checked += bool(values)
    assert checked >= 4
