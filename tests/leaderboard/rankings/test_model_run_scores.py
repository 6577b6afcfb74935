"""A model run with known verdicts shows exactly the hand-worked pass@k and fast_p@k (tests/leaderboard/
model_runs.py works them out) on its page, the ranking, the comparison, every export and the API — each beside
its protocol."""

from __future__ import annotations

import csv
import io
import math

import pytest

from leaderboard.models import ModelRun, RunScore, Submission, Trajectory
from leaderboard.rankings.services import run_comparison_refresh, run_score_refresh_stale
from tests.leaderboard import run_fixtures as fx

pytestmark = pytest.mark.django_db

EXACT = dict(rel=1e-12, abs=1e-15)


@pytest.fixture
def run(problems, user):
    return fx.make_run(user)


def test_the_stored_run_score_is_the_hand_worked_one(run):
    assert (run.state, run.attempts_done, run.attempts_total) == ("finished", 12, 12)
    assert Submission.objects.filter(model_run=run).count() == 12
    assert Trajectory.objects.filter(submission__model_run=run).count() == 1
    score = RunScore.objects.get(model_run=run)
    assert score.k == 3
    assert score.pass_at_k == pytest.approx(fx.PASS_AT_K, **EXACT)
    assert score.pass_at_1 == pytest.approx(fx.PASS_AT_1, **EXACT)
    assert score.fast_1_at_k == pytest.approx(fx.FAST["1"], **EXACT)
    assert score.fast_1_5_at_k == pytest.approx(fx.FAST["1.5"], **EXACT)
    assert score.fast_2_at_k == 0.0
    assert score.geomean_speedup == pytest.approx(fx.GEOMEAN, **EXACT)
    assert score.mean_roofline_fraction == pytest.approx(fx.ROOFLINE, **EXACT)
    assert (score.problems_scored, score.problems_not_scorable, score.correct_attempts) == (3, 1, 4)
    assert score.by_category["tensor-parallel"]["problems"] == 0
    assert score.by_category["tensor-parallel"]["not_scorable"] == ["tensor-parallel/tp_mlp"]
    assert score.by_category["collectives"]["mean_pass_at_k"] == pytest.approx(2 / 3, **EXACT)


def test_scores_update_as_results_land(problems, user):
    run = fx.make_run(user, record=False)
    assert (run.state, run.attempts_done, run.attempts_total) == ("queued", 0, 12)
    assert run.score.pass_at_k is None and run.score.problems_not_scorable == 4
    from leaderboard.submissions.results import result_record

    first = run.attempts.get(problem_id="collectives/all_reduce", attempt=1)
    result_record(submission_id=first.pk, document=fx.document("passed", 1.8, 0.5, first.problem_id, 1))
    run.refresh_from_db()
    assert run.score_stale_since is not None  # recorded: the run is to be scored by the web worker's next job
    run_score_refresh_stale(model_run_id=run.pk)  # that job
    run.refresh_from_db()
    assert (run.state, run.attempts_done, run.score_stale_since) == ("running", 1, None)
    assert run.score.pass_at_1 == 1.0  # one problem, one counted attempt, correct


def test_run_page_shows_the_hand_worked_scores_beside_the_protocol(run, client):
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert fx.PROTOCOL_LABEL in html
    for metric, shown in fx.SHOWN.items():
        assert f'data-metric="{metric}">{shown}' in html, metric
    assert '12</span> of <span id="attempts-total">12</span> attempts done' in html
    assert 'http-equiv="refresh"' not in html  # finished: no more refreshing
    # the grid: a cell per attempt, coloured by verdict and speedup
    assert 'data-verdict="compile_error"' in html and "verdict-passed speed-15" in html
    assert "Not scorable at k=3" in html and "tensor-parallel/tp_mlp" in html
    assert 'id="category-chart"' in html and "vendor/plotly.min.js" in html


def test_run_page_shows_its_standing_and_intervals(run, problems, user, client):
    # The fixture run attempts 4 of the suite's problems: finished, but partial, so not ranked, and the page says so.
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'data-standing="partial"' in html and "not ranked: partial" in html
    assert "misses problems of the suite version it names" in html
    # pass@3 per scored problem 1, 0, 1: three problems cannot tell much apart, the interval is [0, 1]
    # (docs/model-runs.md, "Significance"); fast_2 is 0 on every problem, so its interval is [0, 0].
    assert 'data-interval="pass_at_k">95 % interval 0.0 %–100.0 %' in html
    assert 'data-interval="fast_2">95 % interval 0.0 %–0.0 %' in html
    assert 'data-interval="geomean"' in html and 'id="verdicts-only"' not in html
    # The same attempts on a CPU profile: verdicts only, and no speed interval is shown.
    cpu = fx.make_run(user, manifest=dict(fx.MANIFEST, hardware="cpu-gloo-2", model="cpu-coder"))
    html = client.get(f"/runs/{cpu.pk}/").content.decode()
    assert 'id="verdicts-only"' in html and 'data-interval="pass_at_k"' in html
    assert 'data-interval="fast_1"' not in html and 'data-interval="geomean"' not in html


def test_ranking_page_and_its_exports_carry_the_scores_and_the_protocol(run, client):
    # The fixture run attempts 4 of the suite's problems: finished but partial, so it is listed apart, unranked.
    html = client.get("/runs/").content.decode()
    assert f'data-run="{run.pk}" data-status="partial"' in html and fx.PROTOCOL_LABEL in html
    assert f'data-metric="pass_at_k">{fx.SHOWN["pass_at_k"]}' in html
    assert f'data-metric="fast_1_5">{fx.SHOWN["fast_1_5"]}' in html
    assert client.get("/runs/?format=csv").content.decode().count("\n") == 1  # the ranking: a header, no row

    rows = list(csv.DictReader(io.StringIO(client.get("/runs/?format=csv&table=unranked").content.decode())))
    assert len(rows) == 1
    row = rows[0]
    assert float(row["pass_at_k"]) == pytest.approx(fx.PASS_AT_K, **EXACT)
    assert float(row["pass_at_1"]) == pytest.approx(fx.PASS_AT_1, **EXACT)
    assert float(row["fast_1"]) == pytest.approx(fx.FAST["1"], **EXACT)
    assert float(row["fast_1_5"]) == pytest.approx(fx.FAST["1.5"], **EXACT)
    assert float(row["fast_2"]) == 0.0
    assert row["protocol"] == fx.PROTOCOL_LABEL and row["protocol_mode"] == "zero-shot" and row["protocol_k"] == "3"
    assert row["protocol_tokens"] == "120000" and float(row["protocol_wall_time_s"]) == 720.0

    body = client.get("/runs/?format=json&table=unranked").json()
    record = body["rows"][0]
    assert record["status"] == "partial" and record["rank"] is None
    assert record["pass_at_k"] == pytest.approx(fx.PASS_AT_K, **EXACT)
    assert record["fast_1_5"] == pytest.approx(fx.FAST["1.5"], **EXACT)
    assert record["speedup"] == pytest.approx(fx.GEOMEAN, **EXACT)
    assert record["protocol"] == fx.PROTOCOL_LABEL and record["scored_at_k"] == 3


def test_run_page_exports_every_table(run, client):
    problems = client.get(f"/runs/{run.pk}/?format=json").json()
    assert problems["protocol"] == fx.PROTOCOL_LABEL and problems["scored_at_k"] == 3
    by_id = {r["problem"]: r for r in problems["rows"]}
    assert by_id["collectives/all_reduce"]["pass_at_k"] == 1.0
    assert by_id["collectives/all_reduce"]["fast_1_5"] == 1.0 and by_id["collectives/all_reduce"]["fast_2"] == 0.0
    assert by_id["collectives/all_gather"]["pass_at_k"] == 0.0
    assert by_id["tensor-parallel/tp_mlp"]["pass_at_k"] is None and by_id["tensor-parallel/tp_mlp"]["n"] == 2
    assert by_id["tensor-parallel/tp_mlp"]["best_speedup"] == 3.0

    attempts = list(
        csv.DictReader(io.StringIO(client.get(f"/runs/{run.pk}/?format=csv&table=attempts").content.decode()))
    )
    assert len(attempts) == 12
    assert {(a["problem"], a["attempt"], a["verdict"]) for a in attempts} == {
        (p, str(i), v[0]) for (p, i), v in fx.OUTCOMES.items()
    }

    categories = client.get(f"/runs/{run.pk}/?format=json&table=categories").json()["rows"]
    collectives = next(c for c in categories if c["category"] == "collectives")
    assert collectives["pass_at_k"] == pytest.approx(2 / 3, **EXACT)
    assert collectives["fast_1_5"] == pytest.approx(1 / 3, **EXACT)


def test_api_gives_the_same_numbers_with_the_protocol(run, client):
    detail = client.get(f"/api/model-runs/{run.pk}/").json()
    assert (detail["state"], detail["attempts_done"], detail["attempts_total"]) == ("finished", 12, 12)
    assert detail["protocol"] == {
        "mode": "zero-shot",
        "k": 3,
        "turn_budget": 0,
        "tokens": 120000,
        "wall_time_s": 720.0,
        "label": fx.PROTOCOL_LABEL,
    }
    scores = detail["scores"]
    assert scores["protocol"] == fx.PROTOCOL_LABEL and scores["scored_at_k"] == 3
    assert scores["pass_at_k"] == pytest.approx(fx.PASS_AT_K, **EXACT)
    assert scores["pass_at_1"] == pytest.approx(fx.PASS_AT_1, **EXACT)
    assert scores["fast_p_at_k"] == pytest.approx(fx.FAST, **EXACT)
    overall = detail["breakdown"]["overall"]
    assert overall["pass_at_k"] == pytest.approx(fx.PASS_AT_K, **EXACT)
    assert overall["fast_p_at_k"] == pytest.approx(fx.FAST, **EXACT)
    assert overall["geomean_speedup"] == pytest.approx(fx.GEOMEAN, **EXACT)
    assert overall["not_scorable"] == ["tensor-parallel/tp_mlp"]

    assert client.get("/api/rankings/model-runs/?mode=zero-shot&k=3").json()["count"] == 0  # partial: unranked
    ranking = client.get("/api/rankings/model-runs/?mode=zero-shot&k=3&standing=unranked").json()
    assert ranking["count"] == 1
    assert ranking["results"][0]["scores"]["fast_p_at_k"] == pytest.approx(fx.FAST, **EXACT)
    assert client.get("/api/rankings/model-runs/?mode=agentic").json()["count"] == 0

    attempts = client.get(f"/api/model-runs/{run.pk}/attempts/").json()
    assert attempts["protocol"]["label"] == fx.PROTOCOL_LABEL and len(attempts["attempts"]) == 12
    assert client.get(attempts["attempts"][0]["result_url"]).json()["result"]["verdict"]


def test_the_openapi_schema_documents_runs_rankings_and_results(client, tmp_path):
    from django.core.management import call_command

    call_command("spectacular", validate=True, fail_on_warn=True, file=str(tmp_path / "schema.yaml"))
    schema = client.get("/api/schema/?format=json").json()
    paths = schema["paths"]
    for path in (
        "/api/model-runs/",
        "/api/model-runs/{run_id}/",
        "/api/model-runs/{run_id}/attempts/",
        "/api/rankings/model-runs/",
        "/api/rankings/compare/",
        "/api/problems/{problem_id}/results/",
        "/api/users/{username}/",
    ):
        assert path in paths, path
    assert "ModelRunUpload" in str(paths["/api/model-runs/"]["post"]["requestBody"])
    detail = schema["components"]["schemas"]["ModelRunDetailOutput"]["properties"]
    assert {"attempts_done", "attempts_total", "state", "protocol", "scores", "breakdown"} <= set(detail)
    assert "archive" in schema["components"]["schemas"]["ModelRunUploadRequest"]["properties"]


def test_comparison_scores_both_runs_at_the_smaller_k(run, user, client):
    # the same attempts uploaded as k=3 and again as an agentic run: compare at k=3, and the protocol shows
    agentic = dict(fx.MANIFEST, protocol="agentic", turn_budget=20, model="agent-coder")
    other = fx.make_run(user, manifest=agentic)
    run_comparison_refresh(a_id=run.pk, b_id=other.pk)  # the web worker's job, which the page asks for
    html = client.get(f"/runs/compare/?a={run.pk}&b={other.pk}").content.decode()
    assert "k=3" in html and fx.PROTOCOL_LABEL in html and "agentic · k=3 · 20 turns" in html
    assert html.count("66.7 %") >= 2 and 'id="compare-chart"' in html
    api = client.get(f"/api/rankings/compare/?a={run.pk}&b={other.pk}").json()
    assert api["scored_at_k"] == 3
    assert api["a_breakdown"]["overall"]["pass_at_k"] == pytest.approx(fx.PASS_AT_K, **EXACT)
    assert api["b_breakdown"]["protocol"].startswith("agentic")
    rows = client.get(f"/runs/compare/?a={run.pk}&b={other.pk}&format=json").json()
    assert rows["k"] == 3 and rows["a"]["protocol"] == fx.PROTOCOL_LABEL
    assert {r["problem"] for r in rows["rows"]} == {p for p, _ in fx.OUTCOMES}


def test_user_page_lists_runs_and_best_solutions(run, user, client):
    html = client.get(f"/users/{user.username}/").content.decode()
    assert f'data-run="{run.pk}"' in html and fx.PROTOCOL_LABEL in html
    assert client.get(f"/users/{user.username}/?format=json").json()["rows"][0]["pass_at_k"] == pytest.approx(
        fx.PASS_AT_K, **EXACT
    )
    api = client.get(f"/api/users/{user.username}/").json()
    assert api["model_runs"][0]["scores"]["pass_at_k"] == pytest.approx(fx.PASS_AT_K, **EXACT)


def test_problem_page_ranks_the_runs_solution_once_and_shows_baseline_roofline_and_distribution(run, client):
    html = client.get("/problems/collectives/all_reduce/?profile=h200-nvlink-2").content.decode()
    assert "handworked-coder" in html and fx.PROTOCOL_LABEL in html  # the run's solution, with its protocol
    assert 'id="baseline"' in html and 'id="speedup-chart"' in html and 'id="speedup-summary"' in html
    ranking = client.get("/problems/collectives/all_reduce/?profile=h200-nvlink-2&format=json").json()["rows"]
    # Attempts 1 (1.8, interval 1.71-1.89) and 2 (1.2, 1.14-1.26) of all_reduce are the same code: one distinct
    # solution, one row, both evaluations pooled (never the best of the two). Their intervals have the same log
    # width, so the random-effects weights are equal and the pooled figure is the geometric mean sqrt(1.8 * 1.2).
    assert [(r["who"], r["protocol"], r["evaluations"]) for r in ranking] == [
        ("handworked-coder", fx.PROTOCOL_LABEL, 2)
    ]
    assert ranking[0]["speedup"] == pytest.approx(math.sqrt(1.8 * 1.2), rel=1e-12)
    assert ranking[0]["speedup_ci_low"] < ranking[0]["speedup"] < ranking[0]["speedup_ci_high"]
    results = client.get("/api/problems/collectives/all_reduce/results/?profile=h200-nvlink-2").json()
    assert results["speedups"] == [1.2, 1.8]
    assert results["baseline_median_us"] == pytest.approx((120.0 + 180.0) / 2)  # the median of the two timed runs
    assert results["roofline_us"] is not None and results["roofline_us"] > 0
    api = client.get("/api/problems/collectives/all_reduce/ranking/?profile=h200-nvlink-2").json()
    entry = api["entries"][0]
    assert entry["model_run_id"] == run.pk and entry["protocol"] == fx.PROTOCOL_LABEL
    assert entry["evaluations"] == 2 and entry["speedup"] == pytest.approx(math.sqrt(1.8 * 1.2), rel=1e-12)


def test_problem_page_on_a_cpu_profile_shows_verdicts_only(problems, user, client):
    # The same attempts evaluated on cpu-gloo-2: the timings are pipeline checks, so the ranking lists the solution
    # (one row, both passed evaluations behind it) without a speedup, a rank by speed or a chart.
    cpu = fx.make_run(user, manifest=dict(fx.MANIFEST, hardware="cpu-gloo-2", model="cpu-coder"))
    ranking = client.get("/problems/collectives/all_reduce/?profile=cpu-gloo-2&format=json").json()["rows"]
    assert [(r["who"], r["evaluations"], r["speedup"], r["pipeline_check"]) for r in ranking] == [
        ("cpu-coder", 2, None, True)
    ]
    html = client.get("/problems/collectives/all_reduce/?profile=cpu-gloo-2").content.decode()
    assert "cpu-coder" in html and 'id="speedup-chart"' not in html
    assert client.get("/api/problems/collectives/all_reduce/results/?profile=cpu-gloo-2").json()["speedups"] == []
    scores = client.get(f"/api/model-runs/{cpu.pk}/").json()["scores"]
    assert scores["pass_at_k"] == pytest.approx(fx.PASS_AT_K, **EXACT)  # verdicts still score
    assert scores["fast_p_at_k"] == {"1": None, "1.5": None, "2": None}


def test_tables_sort_on_the_server_and_paginate(problems, user, client):
    # Only runs that cover their suite enter the ranking: leave the fixture's four problems the suite's only
    # active ones, so the three runs are ranked and the ranked table is the one sorted and paginated.
    problems.exclude(id__in={p for p, _ in fx.OUTCOMES}).update(is_active=False)
    runs = [fx.make_run(user, manifest=dict(fx.MANIFEST, model=f"m{i}", tokens=1000 * (i + 1))) for i in range(3)]
    assert {r.score.status for r in ModelRun.objects.select_related("score")} == {"ranked"}
    ModelRun.objects.filter(pk=runs[1].pk).update(model="a-first")
    page = client.get("/runs/?sort=model&per_page=5").content.decode()
    assert page.index('data-run="%d"' % runs[1].pk) < page.index('data-run="%d"' % runs[0].pk)
    desc = client.get("/runs/?sort=-model&format=json").json()["rows"]
    assert [r["model"] for r in desc] == ["m2", "m0", "a-first"]
    paged = client.get("/runs/?sort=model&per_page=5&page=1").content.decode()
    assert "1 row" not in paged and "3 rows" in paged
    assert 'aria-sort="ascending"' in page
    assert math.isclose(client.get("/runs/?sort=pass_at_1&format=json").json()["rows"][0]["pass_at_1"], fx.PASS_AT_1)
