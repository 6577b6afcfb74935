"""pass@k, fast_p@k and run scores against hand-worked numbers (the arithmetic is in the comments).

Plain functions: no database, no Redis.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from evaluator.contract.result import Verdict
from leaderboard.rankings.metrics import (
    Attempt,
    Protocol,
    fast_count,
    fast_p_at_k,
    format_duration,
    format_tokens,
    geometric_mean,
    pass_at_k,
    score_problem,
    score_run,
)

P, W = "passed", "wrong_output"


def exact(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


# --- pass@k -------------------------------------------------------------------------------------------------------


def test_pass_at_1_with_one_of_three_correct_is_one_third():
    # 1 - C(2,1)/C(3,1) = 1 - 2/3 = 1/3; product form: 1 - (1 - 1/3) = 1/3
    assert pass_at_k(3, 1, 1) == pytest.approx(1 / 3, abs=1e-15)


def test_pass_at_2_with_one_of_three_correct_is_two_thirds():
    # 1 - C(2,2)/C(3,2) = 1 - 1/3 = 2/3; product form: 1 - (1 - 2/3) = 2/3
    assert pass_at_k(3, 1, 2) == pytest.approx(2 / 3, abs=1e-15)


def test_pass_at_3_with_two_of_five_correct_is_nine_tenths():
    # 1 - C(3,3)/C(5,3) = 1 - 1/10 = 0.9; product form over i = 4, 5: 1 - (1 - 3/4)(1 - 3/5) = 1 - 1/4 * 2/5 = 0.9
    assert pass_at_k(5, 2, 3) == pytest.approx(0.9, abs=1e-15)


def test_pass_at_1_is_the_fraction_correct():
    # pass@1 = 1 - (n-c)/n = c/n: 7 of 20 correct -> 0.35
    assert pass_at_k(20, 7, 1) == pytest.approx(0.35, abs=1e-15)


def test_edge_cases_are_exact():
    assert pass_at_k(10, 0, 3) == 0.0  # no correct attempt: nothing to draw
    assert pass_at_k(5, 3, 3) == 1.0  # n - c = 2 < k = 3: every draw of 3 holds a correct one
    assert pass_at_k(3, 3, 3) == 1.0  # all correct
    assert pass_at_k(4, 1, 4) == 1.0  # n == k and one correct: the draw is everything
    assert pass_at_k(3, 0, 3) == 0.0


def test_n_below_k_is_refused_with_a_clear_message():
    with pytest.raises(ValueError, match=r"needs at least k=3 attempts, but n=2.*not scorable"):
        pass_at_k(2, 1, 3)


@pytest.mark.parametrize(
    "n, c, k, message",
    [
        (3, 4, 1, "cannot exceed"),
        (3, 1, 0, "k must be 1 or more"),
        (3, -1, 1, "c must be 0 or more"),
    ],
)
def test_impossible_counts_are_refused(n, c, k, message):
    with pytest.raises(ValueError, match=message):
        pass_at_k(n, c, k)


def test_non_integers_are_refused():
    with pytest.raises(TypeError, match="n must be an integer"):
        pass_at_k(3.0, 1, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="bool"):
        pass_at_k(3, True, 1)  # type: ignore[arg-type]


def test_large_n_is_stable_against_the_exact_binomial_fraction():
    # C(197,100)/C(200,100) = (100*99*98)/(200*199*198) = 970200/7880400 = 0.12311557788944724...
    # so pass@100 = 0.8768844221105527...; C(200,100) alone is ~9e58, far past float precision as a ratio of floats.
    expected = exact(200, 3, 100)
    assert expected == 1 - Fraction(100 * 99 * 98, 200 * 199 * 198)
    assert pass_at_k(200, 3, 100) == pytest.approx(float(expected), rel=1e-14)


@pytest.mark.parametrize("n, c, k", [(200, 3, 100), (200, 150, 10), (1000, 1, 999), (1000, 500, 1), (57, 13, 20)])
def test_product_form_matches_math_comb(n, c, k):
    assert pass_at_k(n, c, k) == pytest.approx(float(exact(n, c, k)), rel=1e-12, abs=1e-15)


# --- fast_p@k -----------------------------------------------------------------------------------------------------

# fast_p@k counts an attempt when the lower bound of its speedup's 95 % interval exceeds p. These tests give each
# timed attempt a tight interval, speedup - 0.05 .. speedup + 0.05 (``_low``), so a point estimate well clear of p
# is also significantly clear of it; the boundary and the noise cases name their lower bound outright.
TIGHT = 0.05


def _low(speedup):
    return None if speedup is None else speedup - TIGHT


def _attempts(speedups, verdicts=None, problem="collectives/all_reduce", category="collectives", lows=None):
    verdicts = verdicts or [P] * len(speedups)
    lows = lows or [_low(s) for s in speedups]
    return [Attempt(problem, category, v, s, speedup_ci_low=low) for v, s, low in zip(verdicts, speedups, lows)]


def test_fast_count_is_strictly_greater_than_p():
    # lower bounds 0.85, 1.15, 1.55, 2.45
    attempts = _attempts([0.9, 1.2, 1.6, 2.5])
    assert fast_count(attempts, 1.0) == 3  # 1.2, 1.6, 2.5 (0.9 is slower)
    assert fast_count(attempts, 1.5) == 2  # 1.6, 2.5
    assert fast_count(attempts, 2.0) == 1  # 2.5
    # a lower bound of exactly p is not "faster by more than p"
    assert fast_count(_attempts([1.05, 2.0], lows=[1.0, 1.95]), 1.0) == 1


def test_fast_count_needs_the_interval_clear_of_p_not_the_point_estimate():
    # 1.005 with interval 0.995..1.015 (identical code, noise): not fast; no interval at all: not fast either
    assert fast_count(_attempts([1.005], lows=[0.995]), 1.0) == 0
    assert fast_count([Attempt("collectives/all_reduce", "collectives", P, 2.5)], 1.0) == 0


def test_fast_count_needs_correct_and_timed():
    attempts = _attempts([2.5, 3.0, None], [P, W, P])
    # 3.0 is wrong output, the third is correct but was not timed: only 2.5 counts
    assert fast_count(attempts, 1.0) == 1


def test_fast_p_at_k_hand_worked():
    # n=4 attempts, speedups [0.9, 1.2, 1.6, 2.5] (lower bounds 0.85, 1.15, 1.55, 2.45), all correct, k=2
    # p=1:   c_fast=3, n-c_fast=1 < 2          -> 1.0
    # p=1.5: c_fast=2, 1 - C(2,2)/C(4,2) = 1 - 1/6 = 5/6
    # p=2:   c_fast=1, 1 - C(3,2)/C(4,2) = 1 - 3/6 = 1/2
    attempts = _attempts([0.9, 1.2, 1.6, 2.5])
    assert fast_p_at_k(4, fast_count(attempts, 1.0), 2) == 1.0
    assert fast_p_at_k(4, fast_count(attempts, 1.5), 2) == pytest.approx(5 / 6, abs=1e-15)
    assert fast_p_at_k(4, fast_count(attempts, 2.0), 2) == pytest.approx(1 / 2, abs=1e-15)


# --- one problem --------------------------------------------------------------------------------------------------


def test_problem_score_hand_worked():
    # 4 attempts: passed 0.9, passed 1.6, wrong (fast but wrong), passed 2.5; k=2 (lower bounds speedup - 0.05)
    # n=4, c=3: pass@2 = 1 - C(1,2)/C(4,2) = 1 (n-c=1 < 2)
    # fast_1: 1.6, 2.5 -> 2: 1 - C(2,2)/C(4,2) = 5/6; fast_1.5: same 2 -> 5/6; fast_2: 2.5 -> 1 - C(3,2)/6 = 1/2
    # best 2.5; geomean over correct (0.9, 1.6, 2.5) = (3.6)^(1/3) = 1.5326188647871...
    s = score_problem(_attempts([0.9, 1.6, 4.0, 2.5], [P, P, W, P]), 2)
    assert (s.n, s.c, s.excluded, s.scorable) == (4, 3, 0, True)
    assert s.pass_at_k == 1.0
    assert s.fast_counts == {1.0: 2, 1.5: 2, 2.0: 1}
    assert s.fast_p_at_k[1.0] == pytest.approx(5 / 6)
    assert s.fast_p_at_k[1.5] == pytest.approx(5 / 6)
    assert s.fast_p_at_k[2.0] == pytest.approx(1 / 2)
    assert s.best_speedup == 2.5
    assert s.geomean_speedup == pytest.approx(3.6 ** (1 / 3))


def test_infra_errors_and_unevaluated_attempts_leave_n_and_may_make_a_problem_unscorable():
    # 3 attempts, k=3: one passed, one infra error, one not evaluated yet -> n=1 < 3: not scorable
    attempts = [
        Attempt("collectives/all_reduce", "collectives", Verdict.PASSED, 1.2),
        Attempt("collectives/all_reduce", "collectives", Verdict.INFRA_ERROR),
        Attempt("collectives/all_reduce", "collectives", None),
    ]
    s = score_problem(attempts, 3)
    assert (s.n, s.c, s.excluded, s.scorable) == (1, 1, 2, False)
    assert s.pass_at_k is None and s.fast_p_at_k == {1.0: None, 1.5: None, 2.0: None}
    assert s.best_speedup == 1.2  # still shown; it is a real measurement


def test_geometric_mean_hand_worked():
    # (1 * 4)^(1/2) = 2; (0.5 * 2 * 8)^(1/3) = 8^(1/3) = 2
    assert geometric_mean([1.0, 4.0]) == pytest.approx(2.0)
    assert geometric_mean([0.5, 2.0, 8.0]) == pytest.approx(2.0)
    assert geometric_mean([]) is None


def test_attempt_refuses_nonsense():
    with pytest.raises(ValueError, match="unknown verdict 'ok'"):
        Attempt("collectives/all_reduce", "collectives", "ok")
    with pytest.raises(ValueError, match="speedup must be a finite number above 0"):
        Attempt("collectives/all_reduce", "collectives", P, 0.0)
    with pytest.raises(ValueError, match="roofline_fraction"):
        Attempt("collectives/all_reduce", "collectives", P, 1.0, float("nan"))


def test_score_problem_refuses_mixed_problems():
    mixed = _attempts([1.0]) + _attempts([1.0], problem="collectives/all_gather")
    with pytest.raises(ValueError, match="scores one problem"):
        score_problem(mixed, 1)


# --- a whole run --------------------------------------------------------------------------------------------------

AGENTIC = Protocol("agentic", 2, 40, 2_100_000, 3.5 * 3600)


def _run():
    """Two collectives, one tensor-parallel, one unscorable expert-parallel problem; k=2; every timed attempt's
    interval's lower bound is its speedup - 0.05 (so "> p" below is the lower bound's).

    collectives/all_reduce     passed 1.2 rf 0.5, passed 2.5 rf 0.7  n=2 c=2 pass@2=1   fast1: 2 -> 1, fast1.5: 1 -> 1,
                                                                                         fast2: 1 -> n-c=1 < 2: 1
    collectives/all_gather     wrong,            passed 0.5 rf 0.2   n=2 c=1 pass@2=1   fast1: 0 -> 0 (all p)
    tensor-parallel/tp_mlp     wrong,            wrong                n=2 c=0 pass@2=0   fast: 0
    expert-parallel/moe_combine passed 3.0, infra_error               n=1 < 2: not scorable
    """
    return [
        Attempt("collectives/all_reduce", "collectives", P, 1.2, 0.5, speedup_ci_low=_low(1.2)),
        Attempt("collectives/all_reduce", "collectives", P, 2.5, 0.7, speedup_ci_low=_low(2.5)),
        Attempt("collectives/all_gather", "collectives", W),
        Attempt("collectives/all_gather", "collectives", P, 0.5, 0.2, speedup_ci_low=_low(0.5)),
        Attempt("tensor-parallel/tp_mlp", "tensor-parallel", W),
        Attempt("tensor-parallel/tp_mlp", "tensor-parallel", W),
        Attempt("expert-parallel/moe_combine", "expert-parallel", P, 3.0, speedup_ci_low=_low(3.0)),
        Attempt("expert-parallel/moe_combine", "expert-parallel", "infra_error"),
    ]


SUITE = {
    "collectives/all_reduce": "collectives",
    "collectives/all_gather": "collectives",
    "collectives/broadcast": "collectives",
    "tensor-parallel/tp_mlp": "tensor-parallel",
    "expert-parallel/moe_combine": "expert-parallel",
    "pipeline/stage_boundary_send_recv": "pipeline",
}


def test_run_score_overall_hand_worked():
    r = score_run(_run(), AGENTIC, suite=SUITE)
    o = r.overall
    assert o.problems == 3
    # mean pass@2 over the three scorable problems: (1 + 1 + 0) / 3
    assert o.mean_pass_at_k == pytest.approx(2 / 3)
    # fast_1@2: (1 + 0 + 0) / 3; fast_1.5@2: same; fast_2@2: all_reduce has one attempt > 2 (2.5): 1 -> 1/3
    assert o.mean_fast_p_at_k == pytest.approx({1.0: 1 / 3, 1.5: 1 / 3, 2.0: 1 / 3})
    # geomean pooled over every correct attempt of scorable problems: (1.2 * 2.5 * 0.5)^(1/3) = 1.5^(1/3);
    # moe_combine's 3.0 is not in it (that problem is not scorable at k=2)
    assert o.geomean_speedup == pytest.approx(1.5 ** (1 / 3))
    assert (o.correct_attempts, o.timed_correct_attempts) == (3, 3)
    # roofline fraction pooled the same way: (0.5 + 0.7 + 0.2) / 3
    assert o.mean_roofline_fraction == pytest.approx(1.4 / 3)
    assert r.not_scorable == ("expert-parallel/moe_combine",)
    assert r.not_attempted == ("collectives/broadcast", "pipeline/stage_boundary_send_recv")
    # coverage: 3 scored of 3 + 1 not scorable + 2 not attempted
    assert o.coverage == pytest.approx(3 / 6)


def test_run_score_per_category_hand_worked():
    r = score_run(_run(), AGENTIC, suite=SUITE)
    col = r.by_category["collectives"]
    # pass@2: (1 + 1) / 2 = 1; fast_1@2: (1 + 0) / 2; geomean (1.2 * 2.5 * 0.5)^(1/3); rf (0.5+0.7+0.2)/3
    assert col.problems == 2 and col.mean_pass_at_k == 1.0
    assert col.mean_fast_p_at_k[1.0] == pytest.approx(0.5)
    assert col.geomean_speedup == pytest.approx(1.5 ** (1 / 3))
    assert col.not_attempted == ("collectives/broadcast",)
    assert col.coverage == pytest.approx(2 / 3)
    tp = r.by_category["tensor-parallel"]
    assert tp.mean_pass_at_k == 0.0 and tp.geomean_speedup is None and tp.mean_roofline_fraction is None
    ep = r.by_category["expert-parallel"]
    assert ep.problems == 0 and ep.mean_pass_at_k is None and ep.not_scorable == ("expert-parallel/moe_combine",)
    pipe = r.by_category["pipeline"]
    assert pipe.problems == 0 and pipe.not_attempted == ("pipeline/stage_boundary_send_recv",)


def test_run_scored_at_a_smaller_k_than_the_protocol_says_so():
    # pass@1 from 2 samples: all_reduce 2/2, all_gather 1/2, tp_mlp 0/2, moe_combine 1/1 (n=1 >= k=1 now)
    r = score_run(_run(), AGENTIC, k=1)
    assert r.overall.problems == 4 and r.not_scorable == ()
    assert r.overall.mean_pass_at_k == pytest.approx((1 + 0.5 + 0 + 1) / 4)
    assert r.label() == "agentic · k=2 · 40 turns · 2.1M tokens · 3.5 h · scored at k=1"


# --- protocol -----------------------------------------------------------------------------------------------------


def test_protocol_labels():
    assert AGENTIC.label() == "agentic · k=2 · 40 turns · 2.1M tokens · 3.5 h"
    assert Protocol("agentic", 3, 1, 950, 42).label() == "agentic · k=3 · 1 turn · 950 tokens · 42 s"
    assert Protocol("zero-shot", 5, 0, 120_000, 720).label() == "zero-shot · k=5 · 120k tokens · 12 min"
    assert score_run([], AGENTIC).label() == AGENTIC.label()


@pytest.mark.parametrize(
    "tokens, text",
    [
        (0, "0"),
        (999, "999"),
        (1500, "1.5k"),
        (12_345, "12k"),
        (999_999, "1M"),
        (2_100_000, "2.1M"),
        (1_300_000_000, "1.3B"),
    ],
)
def test_token_counts_read_short(tokens, text):
    assert format_tokens(tokens) == text


def test_durations_read_short():
    assert (format_duration(5), format_duration(600), format_duration(12_600)) == ("5 s", "10 min", "3.5 h")


@pytest.mark.parametrize(
    "args, message",
    [
        (("few-shot", 1, 0, 0, 0.0), "mode must be one of"),
        (("zero-shot", 1, 3, 0, 0.0), "turn_budget 0"),
        (("agentic", 1, 0, 0, 0.0), "turn_budget of 1 or more"),
        (("agentic", 0, 5, 0, 0.0), "k must be 1 or more"),
        (("agentic", 1, 5, -1, 0.0), "tokens must be 0 or more"),
        (("agentic", 1, 5, 0, -3.0), "wall_time_s"),
    ],
)
def test_protocol_refuses_nonsense(args, message):
    with pytest.raises(ValueError, match=message):
        Protocol(*args)
