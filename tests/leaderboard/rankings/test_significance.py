"""Significance, checked against hand-worked numbers (docs/model-runs.md, "Significance"), and through the pages
and the API: a run that is not finished is not ranked; 1.005 ± 0.01 is not fast; two runs of the same code differ
by nothing significant."""

from __future__ import annotations

import math

import pytest

from leaderboard.rankings import metrics, significance
from leaderboard.rankings.services import run_comparison_refresh
from tests.leaderboard import run_fixtures as fx

Attempt = metrics.Attempt


def test_bootstrap_interval_of_a_mean_is_the_hand_worked_one():
    # 4 problems, pass@k 1, 1, 1, 0: the number of 1s drawn is Binomial(4, 3/4): P(0) = 1/256, P(1) = 12/256, so the
    # cumulative share first reaches 2.5 % at mean 1/4; it reaches 97.5 % only at 1 (P(4) = 81/256).
    assert significance.bootstrap_interval([1, 1, 1, 0], significance.mean_statistic) == significance.Interval(0.25, 1)
    # the fixture run's pass@3 per problem: 1, 0, 1 -> Binomial(3, 2/3): P(0) = 1/27 = 3.7 % > 2.5 %: [0, 1]
    assert significance.bootstrap_interval([1, 0, 1], significance.mean_statistic) == significance.Interval(0, 1)


def test_pooling_five_identical_evaluations_narrows_the_interval_by_root_five():
    se = math.log(1.01 / 0.99) / (2 * significance.Z95)
    pooled = significance.pool([(1.0, 0.99, 1.01)] * 5)
    assert pooled.value == pytest.approx(1.0) and pooled.evaluations == 5
    assert pooled.low == pytest.approx(math.exp(-significance.Z95 * se / math.sqrt(5)))


def test_rank_ranges_count_the_significantly_better():
    iv = significance.Interval
    assert significance.rank_ranges([iv(0.8, 0.9), iv(0.85, 0.95), iv(0.1, 0.3), None]) == [
        (1, 2),
        (1, 2),
        (3, 3),
        None,
    ]


def test_a_speedup_of_1_005_plus_minus_0_01_is_not_fast():
    lucky = Attempt("p", "c", "passed", speedup=1.005, speedup_ci_low=0.995)
    sure = Attempt("p", "c", "passed", speedup=1.05, speedup_ci_low=1.02)
    assert not metrics.is_fast(lucky, 1.0) and metrics.is_fast(sure, 1.0)
    assert metrics.fast_count([lucky, sure], 1.0) == 1


NEUTRAL = {("collectives/all_reduce", i): ("passed", 1.005, 0.5) for i in (1, 2, 3)}


def test_a_run_of_baseline_speed_code_scores_no_fast_p_through_the_api(user, client, problems, settings):
    settings.ARENA_VERIFY = False
    run = fx.make_run(user, outcomes=NEUTRAL)  # 1.005 with its interval 0.955-1.055 in every attempt
    scores = client.get(f"/api/model-runs/{run.pk}/").json()["scores"]
    assert scores["pass_at_k"] == 1.0 and scores["fast_p_at_k"]["1"] == 0.0
    assert scores["status"] == "partial" and scores["intervals"]["pass_at_k"] == [1.0, 1.0]


def test_an_unfinished_run_is_not_ranked_on_the_page_or_the_api(user, client, problems, settings):
    settings.ARENA_VERIFY = False
    run = fx.make_run(user, record=False)  # uploaded, nothing evaluated yet
    html = client.get("/runs/").content.decode()
    assert f'data-run="{run.pk}" data-status="unfinished"' in html and 'id="run-unranked"' in html
    assert 'id="run-ranking"' not in html  # nothing is ranked
    assert "0/12" in html
    assert client.get("/api/rankings/model-runs/").json()["count"] == 0
    unranked = client.get("/api/rankings/model-runs/?standing=unranked").json()["results"]
    assert [(r["id"], r["standing"], r["rank"], r["attempts_done"]) for r in unranked] == [
        (run.pk, "unfinished", None, 0)
    ]


def test_compare_says_no_significant_difference_for_the_same_code(user, client, problems, settings):
    settings.ARENA_VERIFY = False
    a = fx.make_run(user)
    b = fx.make_run(user, manifest={**fx.MANIFEST, "model": "twin"})
    run_comparison_refresh(a_id=a.pk, b_id=b.pk)  # the web worker's job, which the page asks for
    body = client.get(f"/api/rankings/compare/?a={a.pk}&b={b.pk}").json()
    assert body["summary"] == "no significant difference" and not body["significant"]
    assert {d["figure"] for d in body["differences"]} >= {"pass_at_k", "fast_1", "geomean"}
    html = client.get(f"/runs/compare/?a={a.pk}&b={b.pk}").content.decode()
    assert 'id="compare-significance"' in html and "no significant difference" in html
    assert 'data-significant="yes"' not in html
