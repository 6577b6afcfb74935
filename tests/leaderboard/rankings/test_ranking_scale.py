"""Ranking pages read a bounded number of queries whatever the size of the data (precomputed RunScore rows,
one query per table), and `seed_demo` fills a realistic database quickly and marks all of it as demo."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from leaderboard.management.commands.seed_demo import clear_demo, seed_demo
from leaderboard.models import ModelRun, Problem, Result, RunScore, Submission
from leaderboard.catalogue.services import problems_sync

pytestmark = pytest.mark.django_db

# The most queries each page may make, on any amount of data.
BOUNDS = {
    "ranking": 6,
    "ranking_filtered": 6,
    "ranking_csv": 3,
    "run": 4,
    "run_attempts_csv": 4,
    "compare": 8,
    "problem": 9,
    "user": 5,
    "api_ranking": 4,
    "api_run": 4,
    "api_compare": 7,
}


def _urls() -> dict[str, str]:
    a, b = ModelRun.objects.order_by("id").values_list("id", flat=True)[:2]
    run = ModelRun.objects.get(pk=a)
    problem = Problem.objects.filter(suite="demo").order_by("id").first()
    return {
        "ranking": "/runs/",
        "ranking_filtered": f"/runs/?profile={run.profile}&mode={run.mode}&sort=-fast_2",
        "ranking_csv": "/runs/?format=csv",
        "run": f"/runs/{a}/",
        "run_attempts_csv": f"/runs/{a}/?format=csv&table=attempts",
        "compare": f"/runs/compare/?a={a}&b={b}",
        "problem": f"/problems/{problem.id}/?profile={run.profile}",
        "user": f"/users/{run.user.username}/",
        "api_ranking": "/api/rankings/model-runs/",
        "api_run": f"/api/model-runs/{a}/",
        "api_compare": f"/api/rankings/compare/?a={a}&b={b}",
    }


def _counts(client) -> dict[str, int]:
    from leaderboard.rankings.services import run_comparison_refresh

    a, b = ModelRun.objects.order_by("id").values_list("id", flat=True)[:2]
    run_comparison_refresh(a_id=a, b_id=b)  # the web worker's job, which the comparison asks for
    counts = {}
    for name, url in _urls().items():
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url)
            _ = response.content  # sent whole, as a server sends it: an export reads its rows while it streams
        assert response.status_code == 200, (url, response.status_code)
        counts[name] = len(queries)
    return counts


def test_every_ranking_page_makes_the_same_bounded_number_of_queries_at_any_size(client):
    seed_demo(runs=3, problems=8, attempts=2, users=2, seed=1, log=lambda _: None)
    small = _counts(client)
    clear_demo()
    seed_demo(runs=40, problems=24, attempts=3, users=6, seed=2, log=lambda _: None)
    large = _counts(client)
    assert large == small, "a page's query count grew with the data"
    for name, count in large.items():
        assert count <= BOUNDS[name], (name, count)


def test_ranking_page_with_a_hundred_runs_is_a_few_queries(client, django_assert_max_num_queries):
    seed_demo(runs=100, problems=6, attempts=3, users=5, seed=3, log=lambda _: None)
    with django_assert_max_num_queries(BOUNDS["ranking"]):
        html = client.get("/runs/?per_page=100&unranked_per_page=100").content.decode()
    assert html.count("data-run=") == 100  # ranked and, listed apart, unranked
    assert 'data-status="unfinished"' in html and 'data-status="partial"' in html
    with django_assert_max_num_queries(BOUNDS["api_ranking"]):
        ranked = client.get("/api/rankings/model-runs/?page_size=100").json()
    unranked = client.get("/api/rankings/model-runs/?page_size=100&standing=unranked").json()
    assert ranked["count"] + unranked["count"] == 100 and unranked["count"] > 0
    assert all(r["rank"] for r in ranked["results"]) and not any(r["rank"] for r in unranked["results"])


def test_seed_demo_fills_marks_and_replaces_demo_data_only(problems, capsys):
    real = Problem.objects.filter(suite="arena").count()
    call_command("seed_demo", runs=4, problems=10, attempts=2, users=3)
    assert ModelRun.objects.filter(is_demo=True).count() == 4 and ModelRun.objects.count() == 4
    assert Problem.objects.filter(suite="demo").count() == 10
    assert Submission.objects.filter(model_run__isnull=False).count() == 4 * 10 * 2 - 2  # all but the partial run's
    assert Result.objects.count() == Submission.objects.filter(state="finished").count()
    assert RunScore.objects.count() == 4 and all(s.pass_at_k is not None for s in RunScore.objects.all())
    # run 2 is still being evaluated (unfinished, with its progress), run 3 misses a problem (partial): neither is
    # ranked; the others are finished and ranked
    states = [(r.state, r.attempts_done, r.attempts_total, r.score.status) for r in ModelRun.objects.order_by("id")]
    assert states == [
        ("finished", 20, 20, "ranked"),
        ("running", 10, 20, "unfinished"),
        ("finished", 18, 18, "partial"),
        ("finished", 20, 20, "ranked"),
    ]
    # repeats of the same code, and re-measurements linked to what they check
    solo = Submission.objects.filter(model_run__isnull=True, remeasure_of__isnull=True)
    assert solo.values("source_key").distinct().count() < solo.count()
    assert Submission.objects.filter(remeasure_of__isnull=False, result__isnull=False).exists()
    assert "seeded 10 problems, 3 users, 4 runs" in capsys.readouterr().out

    problems_sync()  # the registry sync leaves demo problems alone
    assert Problem.objects.filter(suite="demo", is_active=True).count() == 10

    call_command("seed_demo", runs=2, problems=5, attempts=1, users=1)  # replaces, never adds up
    assert ModelRun.objects.count() == 2 and Problem.objects.filter(suite="demo").count() == 5
    call_command("seed_demo", clear=True)
    assert ModelRun.objects.count() == 0 and Problem.objects.filter(suite="demo").count() == 0
    assert Problem.objects.filter(suite="arena").count() == real


EXPORTS = {
    "ranking_csv": "/runs/?format=csv",
    "ranking_json": "/runs/?format=json&sort=-fast_2",
    "unranked_csv": "/runs/?format=csv&table=unranked",
}


def _export_counts(client) -> dict[str, tuple[int, bool, int]]:
    """Queries, whether it streamed, and rows of each export (the body read whole, as a server sends it)."""
    out = {}
    for name, url in EXPORTS.items():
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url)
            body = response.content.decode()
        assert response.status_code == 200, url
        rows = body.count("\n") - 1 if "csv" in url else len(__import__("json").loads(body)["rows"])
        out[name] = (len(queries), response.streaming, rows)
    return out


def test_exports_stream_every_row_in_the_same_few_queries_at_any_size(client):
    seed_demo(runs=3, problems=8, attempts=2, users=2, seed=1, log=lambda _: None)
    small = _export_counts(client)
    clear_demo()
    seed_demo(runs=60, problems=8, attempts=2, users=6, seed=2, log=lambda _: None)
    large = _export_counts(client)
    for name in EXPORTS:
        assert small[name][:2] == large[name][:2] and large[name][1], (name, small[name], large[name])
    assert large["ranking_csv"][2] + large["unranked_csv"][2] == 60  # every run, in one table or the other
