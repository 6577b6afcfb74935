"""The host's clock against the timer's samples: a solution whose samples hide time beyond the allowance is
refused; honest figures, whatever their spin or size, are not."""

from __future__ import annotations

from evaluator.host.host_clock import ALLOWANCE_FLOOR_US, Windows, allowance_us, cross_check

WARMUP = 2


def _windows(
    base_window: list[float], sol_window: list[float], base_spin: float = 0.0, sol_spin: float = 0.0
) -> Windows:
    warm = {i: 1e6 for i in range(WARMUP)}  # warm-up iterations are never compared
    return Windows(
        baseline={**warm, **{WARMUP + k: w for k, w in enumerate(base_window)}},
        solution={**warm, **{WARMUP + k: w for k, w in enumerate(sol_window)}},
        baseline_spin_us=base_spin,
        solution_spin_us=sol_spin,
    )


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


def test_a_fifth_of_a_long_call_hidden_from_the_samples_is_refused_on_gpu_hosts_and_counted_on_cpu_hosts() -> None:
    from evaluator.host.host_clock import window_figures

    # Calls of 20 ms whose samples claim 16 ms; the host's round trips vary by ±300 µs around 1 ms.
    base = [20_000.0] * 30
    overhead = [1000.0 + 300.0 * ((k * 7) % 3 - 1) for k in range(30)]
    base_window = [b + o for b, o in zip(base, overhead)]
    windows = _windows(base_window, base_window)
    _, refusal = cross_check(windows, base, [16_000.0] * 30, WARMUP, "cuda")
    assert refusal is not None
    # On CPU hosts the figure is the host's window, so the hidden fifth is in it: nothing to refuse, nothing gained.
    windows.baseline_staged = {i: 500.0 for i in windows.baseline}
    windows.solution_staged = {i: 500.0 for i in windows.solution}
    base_fig, sol_fig = window_figures(windows, WARMUP)
    assert sol_fig == base_fig and min(sol_fig) > 20_000.0
    # ... and a gross forgery, hiding more than a whole baseline window per call, is still refused there.
    _, refusal = cross_check(_windows(base_window, [60_000.0] * 30), base, [16_000.0] * 30, WARMUP, "cpu")
    assert refusal is not None


def test_nothing_to_compare_is_said_not_refused() -> None:
    summary, refusal = cross_check(Windows(), [], [], 0, "cuda")
    assert refusal is None and summary == {"checked": False, "reason": "no timed iterations to compare"}


def test_on_cpu_hosts_the_figures_are_the_hosts_windows_less_the_judges_staging_whatever_the_samples_say() -> None:
    from evaluator.host.host_clock import window_figures

    # The solution's process could claim any sample (its key is in its memory); the figures never read them. Each
    # side: its window by the host's clock less the judge's staging of its inputs (both measured on the host).
    windows = _windows([1300.0] * 20, [1250.0] * 20)
    windows.baseline_staged = {WARMUP + k: 300.0 for k in range(20)}
    windows.solution_staged = {WARMUP + k: 250.0 for k in range(20)}
    base_fig, sol_fig = window_figures(windows, WARMUP)
    assert base_fig == [1000.0] * 20 and sol_fig == [1000.0] * 20
    # A baseline whose window is longer (the judge's Python path) does not make the solution's figure smaller than
    # its own window less its own staging: that was the room a forged sample once bought.
    heavier = _windows([4000.0] * 20, [1250.0] * 20)
    heavier.baseline_staged = {WARMUP + k: 300.0 for k in range(20)}
    heavier.solution_staged = {WARMUP + k: 250.0 for k in range(20)}
    assert window_figures(heavier, WARMUP)[1] == [1000.0] * 20
    # An iteration the host has no staging for gives no figures at all, never a guess.
    del heavier.solution_staged[WARMUP]
    assert window_figures(heavier, WARMUP) == ([], [])


def test_a_spin_sized_from_forged_launch_times_buys_no_room_for_hidden_work() -> None:
    """The spin kernel runs for however long the GPU's clock makes it, while the cross-check subtracts its nominal
    length: a solution that claimed 200 ms launches (its own process reports them) once got a 600 ms spin the GPU ran
    in 470 ms and hid a fifth of each call in the difference. The host now sets one spin for both sides, from the
    baseline's launches."""
    from types import SimpleNamespace

    from evaluator.host.timing_pass import _one_spin
    from evaluator.timer.spin import spin_us

    forged = SimpleNamespace(samples=SimpleNamespace(samples=[(0.0, 200_000.0)] * WARMUP))
    judge = SimpleNamespace(messages=[{"kind": "baselined", "i": i, "launch_us": 40.0} for i in range(WARMUP)])
    session = SimpleNamespace(profile=SimpleNamespace(device="cuda"), ranks=[forged], judges=[judge])
    one = _one_spin(session, 0, WARMUP)
    # Sized from the baseline's launches alone: the solution's claimed launches (or CPU work in its warm-up calls)
    # would otherwise buy a spin that hides host computation under it.
    assert one == spin_us([40.0], True) < spin_us([200_000.0], True)
    # Both sides' windows hold the spin as the GPU ran it (78 % of nominal here) and the solution hides 50 ms of
    # each 250 ms call from its samples: refused, since the same nominal spin comes off both windows.
    ran = 0.78 * one
    base_window = [ran + 12.0 + 1000.0] * 20
    sol_window = [ran + 250_000.0 + 1000.0] * 20
    _, refusal = cross_check(_windows(base_window, sol_window, one, one), [12.0] * 20, [200_000.0] * 20, WARMUP, "cuda")
    assert refusal is not None
