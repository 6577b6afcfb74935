"""The home page's leaders, a problem's best over time and a run's curves follow the ranking rules, because they are
read from the ranking selectors: CPU profiles give no speed figures, repeats of one solution are pooled, and
fast_p counts an attempt only when its speedup's interval lies above p."""

from __future__ import annotations

import pytest

from leaderboard.models import Problem
from leaderboard.rankings import overview
from leaderboard.submissions.results import result_record
from leaderboard.submissions.services import submission_create
from tests.leaderboard import run_fixtures as fx
from tests.leaderboard.helpers import ALL_REDUCE, CORRECT, passed_document

pytestmark = pytest.mark.django_db
GPU, CPU = "h200-nvlink-2", "cpu-gloo-2"


@pytest.fixture(autouse=True)
def no_remeasurements(settings):
    settings.ARENA_VERIFY = False


def _submit(user, speedup, *, source=None, profile=GPU):
    problem = Problem.objects.get(pk=ALL_REDUCE)
    submission = submission_create(
        user=user, problem=ALL_REDUCE, profile=profile, filename="s.py", source=source or CORRECT.read_text()
    )
    result_record(submission_id=submission.pk, document=passed_document(speedup, version=problem.version))
    return submission


def test_a_runs_fast_p_curve_counts_on_the_interval_and_is_absent_on_cpu(problems, user):
    # The hand-worked run (tests/leaderboard/run_fixtures.py); every interval is speedup x 0.95 .. x 1.05.
    # At p = 1.25: all_reduce's 1.8 (lower bound 1.71) counts; broadcast's 1.3 is above 1.25 but its lower bound
    # 1.235 is not, so it does not: fast_1.25@3 = (1 + 0 + 0) / 3, not the 2/3 point estimates would give.
    curves = overview.model_run_curves(run=fx.make_run(user))
    fast = dict(zip(curves.ps, curves.fast_at))
    assert fast[1.25] == pytest.approx(1 / 3) and fast[1.0] == pytest.approx(fx.FAST["1"])
    assert curves.pass_at[-1] == pytest.approx(fx.PASS_AT_K) and curves.pass_at[0] == pytest.approx(fx.PASS_AT_1)
    cpu = overview.model_run_curves(run=fx.make_run(user, manifest=dict(fx.MANIFEST, hardware=CPU, model="c")))
    assert set(cpu.fast_at) == {None} and cpu.pass_at[-1] == pytest.approx(fx.PASS_AT_K)


def test_the_home_page_leader_pools_repeats_of_one_solution(problems, django_user_model):
    ada, bob = (django_user_model.objects.create_user(n) for n in ("ada", "bob"))
    # ada's one file evaluated three times (1.0, 1.0, 4.0, intervals of equal log width): one solution, pooled to
    # the geometric mean 4^(1/3) = 1.587, never the luckiest 4.0; bob's 2.0 leads.
    for speedup in (1.0, 1.0, 4.0):
        _submit(ada, speedup)
    _submit(bob, 2.0, source=CORRECT.read_text() + "\n_VARIANT = 'bob'\n")
    problem = Problem.objects.get(pk=ALL_REDUCE)
    summaries, leaders = overview.category_summaries([(problem, GPU)])
    assert overview.entry_name(leaders[ALL_REDUCE].leader) == "bob" and leaders[ALL_REDUCE].solutions == 2
    assert summaries[problem.category].best_speedup == pytest.approx(2.0)
    points = overview.problem_best_over_time(problem=problem, profile=GPU)
    assert [(p.username, round(p.speedup, 3)) for p in points] == [("ada", round(4 ** (1 / 3), 3)), ("bob", 2.0)]


def test_cpu_results_give_no_leader_speedup_or_record(problems, user):
    _submit(user, 3.0, profile=CPU)
    problem = Problem.objects.get(pk=ALL_REDUCE)
    assert overview.ranking_profiles([problem], {ALL_REDUCE: CPU}) == {ALL_REDUCE: CPU}  # no GPU result to prefer
    summaries, leaders = overview.category_summaries([(problem, CPU)])
    assert leaders[ALL_REDUCE].leader is None and leaders[ALL_REDUCE].solutions == 1
    summary = summaries[problem.category]
    assert summary.best_speedup is None and summary.leader == ""
    assert overview.problem_best_over_time(problem=problem, profile=CPU) == []
