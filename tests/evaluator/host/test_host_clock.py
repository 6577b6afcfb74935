"""The host's clock against the timer's samples: a solution whose samples hide time beyond the allowance is
refused; honest figures, whatever their spin or size, are not."""

from __future__ import annotations

from evaluator.host.host_clock import ALLOWANCE_FLOOR_US, Windows, allowance_us, cross_check

WARMUP = 2


def _windows(base_window: list[float], sol_window: list[float], base_spin: float = 0.0,
             sol_spin: float = 0.0) -> Windows:
    warm = {i: 1e6 for i in range(WARMUP)}  # warm-up iterations are never compared
    return Windows(baseline={**warm, **{WARMUP + k: w for k, w in enumerate(base_window)}},
                   solution={**warm, **{WARMUP + k: w for k, w in enumerate(sol_window)}},
                   baseline_spin_us=base_spin, solution_spin_us=sol_spin)


def test_identical_overheads_pass_and_are_reported() -> None:
    base, sol = [500.0] * 20, [250.0] * 20
    summary, refusal = cross_check(_windows([800.0] * 20, [550.0] * 20), base, sol, WARMUP, "cuda")
    assert refusal is None
    assert summary["checked"] and abs(summary["unaccounted_us"]) < 1e-9
    assert summary["solution_overhead_us"] == summary["baseline_overhead_us"] == 300.0


def test_samples_that_hide_time_the_host_saw_are_refused() -> None:
    # The solution really took 5000 µs per call (the host saw it) and its samples claim 500.
    base, sol = [5000.0] * 20, [500.0] * 20
    summary, refusal = cross_check(_windows([5300.0] * 20, [5300.0] * 20), base, sol, WARMUP, "cuda")
    assert refusal is not None and "host's clock" in refusal and "4500 µs" in refusal
    assert summary["unaccounted_us"] == 4500.0


def test_a_longer_spin_in_front_of_the_solution_is_not_taken_for_hidden_time() -> None:
    # A solution slow to launch gets a 3 ms spin (device time in its window, in no sample); the baseline 200 µs.
    base, sol = [400.0] * 20, [400.0] * 20
    windows = _windows([900.0] * 20, [3700.0] * 20, base_spin=200.0, sol_spin=3000.0)
    summary, refusal = cross_check(windows, base, sol, WARMUP, "cuda")
    assert refusal is None and summary["unaccounted_us"] == 0.0


def test_noise_within_the_allowance_passes_and_beyond_it_does_not() -> None:
    base, sol = [1000.0] * 20, [1000.0] * 20
    allowance = ALLOWANCE_FLOOR_US["cpu"]  # the baseline's overhead does not vary: no noise term
    within = _windows([3000.0] * 20, [3000.0 + allowance - 1] * 20)
    beyond = _windows([3000.0] * 20, [3000.0 + allowance + 1] * 20)
    assert cross_check(within, base, sol, WARMUP, "cpu")[1] is None
    assert cross_check(beyond, base, sol, WARMUP, "cpu")[1] is not None


def test_the_allowance_grows_with_the_baselines_noise_not_with_its_size_or_the_solutions_noise() -> None:
    quiet = [500.0 + (k % 2) for k in range(40)]
    noisy = [500.0 + 400.0 * (k % 2) for k in range(40)]
    assert allowance_us(quiet, "cuda") < allowance_us(noisy, "cuda")
    assert allowance_us([50_000.0 + x for x in quiet], "cuda") == allowance_us(quiet, "cuda")
    # A solution that makes its own overhead noisy gains no allowance: only the baseline's spread counts.
    base, sol = [1000.0] * 20, [1000.0] * 20
    jittery = _windows([3000.0] * 20, [3000.0 + 5000.0 * (k % 2) for k in range(20)])
    assert cross_check(jittery, base, sol, WARMUP, "cuda")[1] is not None


def test_a_fifth_of_a_long_call_hidden_from_the_samples_is_refused_on_both_kinds_of_host() -> None:
    # Calls of 20 ms whose samples claim 16 ms; the host's round trips vary by ±300 µs around 1 ms.
    base = [20_000.0] * 30
    overhead = [1000.0 + 300.0 * ((k * 7) % 3 - 1) for k in range(30)]
    base_window = [b + o for b, o in zip(base, overhead)]
    for device in ("cpu", "cuda"):
        _, refusal = cross_check(_windows(base_window, base_window), base, [16_000.0] * 30, WARMUP, device)
        assert refusal is not None, device


def test_nothing_to_compare_is_said_not_refused() -> None:
    summary, refusal = cross_check(Windows(), [], [], 0, "cuda")
    assert refusal is None and summary == {"checked": False, "reason": "no timed iterations to compare"}


def test_on_cpu_hosts_a_figure_is_at_least_what_the_hosts_clock_saw_and_never_below_its_sample() -> None:
    from evaluator.host.host_clock import window_figures

    base, sol = [1000.0] * 20, [100.0] * 20  # the solution's samples claim a tenth of the baseline's time
    # ... but the host saw both sides take as long (windows of 1300 µs; the protocol's overhead is 300 µs)
    windows = _windows([1300.0] * 20, [1300.0] * 20)
    base_fig, sol_fig = window_figures(windows, base, sol, WARMUP)
    assert base_fig == [1000.0] * 20 and sol_fig == [1000.0] * 20
    # a window shorter than the overhead by chance never makes a figure smaller than its own sample
    short = _windows([1300.0] * 20, [50.0] * 20)
    assert window_figures(short, base, sol, WARMUP)[1] == [100.0] * 20
