"""A run's whole score (every figure, its intervals and curves) is stored when its results are recorded, and two runs'
comparison (their paired differences with bootstrap intervals) by a job on the web queue that the comparison asks
for; the run and comparison pages and the API read them: what they show equals scoring the runs per request (the
previous pages), and no request scores a run or runs a bootstrap."""

from __future__ import annotations

import re
from contextlib import contextmanager

import pytest

from leaderboard.management.commands.seed_demo import seed_demo
from leaderboard.models import ModelRun, RunScore
from leaderboard.rankings import comparison, metrics, overview, run_selectors, scores, services, significance
from tests.leaderboard import run_fixtures as fx

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_remeasurements(settings):
    settings.ARENA_VERIFY = False


def _scored_now(run: ModelRun):
    attempts = run_selectors.model_run_attempts(run=run)
    return run_selectors.model_run_score(run=run, attempts=attempts), vars(
        overview.model_run_curves(run=run, attempts=attempts)
    )


def _body(html: str) -> str:
    """The page without what differs between two renders of it (the CSRF token)."""
    return re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", html)


def _as_scored_per_request(client, url: str, monkeypatch) -> str:
    """The page as the previous code rendered it: every score, curve and comparison it shows computed now."""
    from leaderboard.rankings.generations import bump

    with monkeypatch.context() as m:
        m.setattr(scores, "stored_score", lambda run, k=None: run_selectors.model_run_score(run=run, k=k))
        m.setattr(scores, "stored_curves", lambda run: vars(overview.model_run_curves(run=run)))
        m.setattr(comparison, "model_run_comparison", comparison.model_run_comparison_compute)
        bump()  # not the page cached a moment ago
        try:
            return _body(client.get(url).content.decode())
        finally:
            bump()


@pytest.fixture
def no_scoring_in_requests(monkeypatch):
    """Makes scoring a run, or running a bootstrap, fail the request that tries: a context to read pages in."""

    def refuse(*args, **kwargs):
        raise AssertionError("a request scored a run or ran a bootstrap")

    @contextmanager
    def context():
        with monkeypatch.context() as m:
            for module, name in (
                (significance, "bootstrap_interval"),
                (metrics, "score_run"),
                (run_selectors, "model_run_score"),
                (overview, "model_run_curves"),
                (comparison, "model_run_comparison_compute"),
            ):
                m.setattr(module, name, refuse)
            yield

    return context


def test_every_runs_stored_score_equals_scoring_it_now_over_seeded_data():
    seed_demo(runs=10, problems=12, attempts=3, users=3, seed=11, log=lambda _: None)
    runs = list(ModelRun.objects.select_related("score").order_by("pk"))
    assert len(runs) == 10
    for run in runs:
        score, curves = _scored_now(run)
        assert scores.stored_score(run) == score, run.pk
        assert scores.stored_curves(run) == curves, run.pk
        at_1 = run_selectors.model_run_score(run=run, k=1, suite={}, intervals=False).overall.mean_pass_at_k
        assert run.score.pass_at_1 == at_1 and run.score.pass_at_k == score.overall.mean_pass_at_k, run.pk
        assert score.overall.intervals, "the seeded runs have intervals to compare"


def test_the_run_and_compare_pages_show_what_scoring_per_request_showed(
    problems, client, user, monkeypatch, no_scoring_in_requests
):
    seed_demo(runs=4, problems=10, attempts=3, users=2, seed=12, log=lambda _: None)
    hand = fx.make_run(user)  # a run recorded through the services, result by result
    a, b = ModelRun.objects.filter(is_demo=True).order_by("pk")[:2]
    services.run_comparison_refresh(a_id=a.pk, b_id=b.pk)  # what the web worker does when the page asks for it
    urls = [
        f"/runs/{hand.pk}/",
        f"/runs/{a.pk}/",
        f"/runs/compare/?a={a.pk}&b={b.pk}",
        f"/runs/{a.pk}/?format=json&table=categories",
        f"/api/model-runs/{a.pk}/",
        f"/api/rankings/compare/?a={a.pk}&b={b.pk}",
        f"/runs/compare/?a={a.pk}&b={b.pk}&format=json",
    ]
    stored = {}
    with no_scoring_in_requests():
        for url in urls:
            response = client.get(url)
            assert response.status_code == 200, url
            stored[url] = _body(response.content.decode())
    for url in urls:
        assert stored[url] == _as_scored_per_request(client, url, monkeypatch), url
    assert "pass@" in stored[f"/runs/{hand.pk}/"] and fx.SHOWN["pass_at_k"] in stored[f"/runs/{hand.pk}/"]
    assert 'id="compare-significance"' in stored[f"/runs/compare/?a={a.pk}&b={b.pk}"]


def test_a_comparison_is_computed_by_the_web_worker_never_in_the_request(
    problems, client, user, run_worker, no_scoring_in_requests
):
    a = fx.make_run(user)
    b = fx.make_run(user, manifest={**fx.MANIFEST, "model": "twin"})
    page, api = f"/runs/compare/?a={a.pk}&b={b.pk}", f"/api/rankings/compare/?a={a.pk}&b={b.pk}"
    with no_scoring_in_requests():
        first = client.get(page)
        assert first.status_code == 200 and 'id="compare-computing"' in first.content.decode()
        assert 'http-equiv="refresh"' in first.content.decode() and "no-store" in first["Cache-Control"]
        computing = client.get(api)
        assert computing.status_code == 202 and computing["Retry-After"] and computing.json()["status"] == "computing"
        assert client.get(page + "&format=csv").status_code == 202
    assert run_worker("web"), "the page asked the web worker for the comparison"
    with no_scoring_in_requests():
        html = client.get(page).content.decode()
        body = client.get(api).json()
    assert 'id="compare-computing"' not in html and 'id="compare-summary"' in html
    assert 'id="compare-significance"' in html and "no significant difference" in html
    assert body["summary"] == "no significant difference" and body["scored_at_k"] == a.k

    # a newer score of one run makes the stored comparison out of date: asked for again, never computed here
    services.run_score_refresh(model_run_id=b.pk)
    with no_scoring_in_requests():
        assert client.get(api).status_code == 202
    assert run_worker("web")
    with no_scoring_in_requests():
        assert client.get(api).json()["differences"] == body["differences"]


def test_a_run_whose_row_holds_no_whole_score_is_not_scored_in_the_request(
    problems, client, user, no_scoring_in_requests
):
    run = fx.make_run(user)
    RunScore.objects.filter(pk=run.pk).update(detail={})  # a row written before whole scores were stored
    with no_scoring_in_requests():
        html = client.get(f"/runs/{run.pk}/").content.decode()
        assert client.get(f"/api/model-runs/{run.pk}/").status_code == 200
    assert 'id="run-unscored"' in html


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
    # Size is what is compared, not the profile: a GPU profile's result updates standings a CPU profile has none of,
    # and which profiles the seeded runs draw depends on what the database held before.
    from leaderboard.models import Submission

    ModelRun.objects.filter(pk=small.pk).update(profile=large.profile)
    Submission.objects.filter(model_run=small).update(profile=large.profile)
    small.refresh_from_db()
    assert _queries_to_record_one_result(small) == _queries_to_record_one_result(large)


def test_an_unscored_run_reads_as_scoring_no_attempts_does(problems, user):
    run = fx.make_run(user, record=False)
    for profile in ("cpu-gloo-2", "h200-nvlink-2"):
        run.profile = profile
        assert scores.unscored(run) == metrics.score_run(
            [], metrics.Protocol.of_run(run), suite={}, timed=metrics.measures_speed(profile), intervals=False
        )
