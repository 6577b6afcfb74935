"""A run's whole score (every figure, its intervals and curves) is stored when its results are recorded, and the run
and comparison pages and the API read it: what they show equals scoring the runs per request (the previous pages),
and no run page runs a bootstrap (the comparison still bootstraps the two runs' paired differences)."""

from __future__ import annotations

import re

import pytest

from leaderboard.management.commands.seed_demo import seed_demo
from leaderboard.models import ModelRun, RunScore
from leaderboard.rankings import overview, scores, significance
from leaderboard.rankings import selectors as rankings
from tests.leaderboard import run_fixtures as fx

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_remeasurements(settings):
    settings.ARENA_VERIFY = False


def _scored_now(run: ModelRun):
    attempts = rankings.model_run_attempts(run=run)
    return rankings.model_run_score(run=run, attempts=attempts), vars(overview.model_run_curves(run=run,
                                                                                                  attempts=attempts))


def _body(html: str) -> str:
    """The page without what differs between two renders of it (the CSRF token)."""
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", html)


def _as_scored_per_request(client, url: str, runs: list[ModelRun]) -> str:
    """The page as the previous code rendered it: the runs' stored scores set aside, so it scores them now."""
    saved = {r.pk: RunScore.objects.get(pk=r.pk).detail for r in runs}
    RunScore.objects.filter(pk__in=saved).update(detail={})
    from leaderboard.rankings.generations import bump

    bump()  # not the page cached a moment ago
    try:
        return _body(client.get(url).content.decode())
    finally:
        for pk, detail in saved.items():
            RunScore.objects.filter(pk=pk).update(detail=detail)
        bump()


def test_every_runs_stored_score_equals_scoring_it_now_over_seeded_data():
    seed_demo(runs=10, problems=12, attempts=3, users=3, seed=11, log=lambda _: None)
    runs = list(ModelRun.objects.select_related("score").order_by("pk"))
    assert len(runs) == 10
    for run in runs:
        score, curves = _scored_now(run)
        assert scores.stored_score(run) == score, run.pk
        assert scores.stored_curves(run) == curves, run.pk
        at_1 = rankings.model_run_score(run=run, k=1, suite={}, intervals=False).overall.mean_pass_at_k
        assert run.score.pass_at_1 == at_1 and run.score.pass_at_k == score.overall.mean_pass_at_k, run.pk
        assert score.overall.intervals, "the seeded runs have intervals to compare"


def test_the_run_and_compare_pages_show_what_scoring_per_request_showed(problems, client, user, monkeypatch):
    seed_demo(runs=4, problems=10, attempts=3, users=2, seed=12, log=lambda _: None)
    hand = fx.make_run(user)  # a run recorded through the services, result by result
    a, b = ModelRun.objects.filter(is_demo=True).order_by("pk")[:2]
    urls = {f"/runs/{hand.pk}/": [hand], f"/runs/{a.pk}/": [a], f"/runs/compare/?a={a.pk}&b={b.pk}": [a, b],
            f"/runs/{a.pk}/?format=json&table=categories": [a], f"/api/model-runs/{a.pk}/": [a],
            f"/api/rankings/compare/?a={a.pk}&b={b.pk}": [a, b]}
    stored = {}
    bootstraps = []
    real = significance.bootstrap_interval
    monkeypatch.setattr(significance, "bootstrap_interval", lambda *x, **kw: bootstraps.append(1) or real(*x, **kw))
    for url in urls:
        before = len(bootstraps)
        response = client.get(url)
        assert response.status_code == 200, url
        stored[url] = _body(response.content.decode())
        if "compare" not in url:
            assert len(bootstraps) == before, f"{url} ran a bootstrap"
    for url, runs in urls.items():
        assert stored[url] == _as_scored_per_request(client, url, runs), url
    assert "pass@" in stored[f"/runs/{hand.pk}/"] and fx.SHOWN["pass_at_k"] in stored[f"/runs/{hand.pk}/"]


def _queries_to_record_one_result(run: ModelRun) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from leaderboard.models import Result, Submission
    from leaderboard.submissions.results import result_record

    attempt = Submission.objects.filter(model_run=run, result__verdict="passed").order_by("pk").first()
    document = attempt.result.document
    Result.objects.filter(submission=attempt).delete()
    Submission.objects.filter(pk=attempt.pk).update(state=Submission.State.RUNNING, verdict=None)
    with CaptureQueriesContext(connection) as queries:
        assert result_record(submission_id=attempt.pk, document=document).verdict == "passed"
    return len(queries)


def test_recording_a_result_makes_the_same_queries_for_a_small_run_and_a_large_one():
    from django.db.models import Count, Exists, OuterRef

    from leaderboard.models import Result

    seed_demo(runs=4, problems=12, attempts=3, users=2, seed=13, min_coverage=0.2, log=lambda _: None)
    passed = Result.objects.filter(submission__model_run=OuterRef("pk"), verdict="passed")
    runs = list(ModelRun.objects.filter(Exists(passed)).annotate(n=Count("attempts")).order_by("n"))
    small, large = runs[0], runs[-1]
    assert large.n >= 2 * small.n, (small.n, large.n)
    assert _queries_to_record_one_result(small) == _queries_to_record_one_result(large)
