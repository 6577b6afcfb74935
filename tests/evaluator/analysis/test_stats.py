"""The speedup estimator: paired per iteration, so work that varies from draw to draw cancels out."""

import random

from evaluator.analysis.stats import slowest_rank, speedup, summarize


def test_identical_code_on_draws_of_varying_work_measures_one_with_a_tight_interval():
    rng = random.Random(1)
    work = [rng.uniform(500, 900) for _ in range(100)]  # µs each draw of the inputs asks for
    baseline = [w * rng.uniform(0.995, 1.005) for w in work]
    solution = [w * rng.uniform(0.995, 1.005) for w in work]
    result = speedup(baseline, solution)
    assert abs(result["speedup"] - 1.0) < 0.005
    assert result["ci_low"] <= 1.0 <= result["ci_high"]
    assert result["uncertainty"] < 0.005


def test_a_solution_twice_as_fast_measures_two():
    baseline = [100.0 + i % 7 for i in range(50)]
    solution = [b / 2 for b in baseline]
    result = speedup(baseline, solution)
    assert result["speedup"] == 2.0 and result["ratio_of_medians"] == 2.0


def test_an_iteration_counts_its_slowest_rank():
    assert slowest_rank([[1.0, 5.0], [3.0, 2.0]]) == [3.0, 5.0]
    assert summarize([1.0, 2.0, 3.0])["median_us"] == 2.0
