"""How many calls a timed window holds: enough that the host's floor is a twentieth of a baseline call, within
the limits of what one window may carry."""

from evaluator.host import batch


def test_a_long_call_is_timed_alone_and_a_short_one_in_a_window_of_many():
    assert batch.calls_per_window(400.0, 10_000.0, 1 << 10, 2) == 1
    # 400 µs of floor against 5 % of a 1 ms call: 8 calls.
    assert batch.calls_per_window(400.0, 1000.0, 1 << 10, 2) == 8
    # 12 µs calls want 667; 5 µs calls would want 1,600: the count limit holds them to MAX_CALLS.
    assert batch.calls_per_window(400.0, 12.0, 1 << 10, 2) == 667
    assert batch.calls_per_window(400.0, 5.0, 1 << 10, 2) == batch.MAX_CALLS


def test_a_window_never_carries_more_bytes_or_values_than_its_limits():
    assert batch.calls_per_window(400.0, 12.0, 1 << 20, 2) == batch.MAX_BYTES // (1 << 20)
    # The bench all-reduce's 32 MiB a call: timed alone, as before windows held several calls.
    assert batch.calls_per_window(400.0, 12.0, 32 << 20, 2) == 1
    assert batch.calls_per_window(400.0, 5.0, 1 << 10, 100) == batch.MAX_VALUES // 100
    assert batch.calls_per_window(400.0, 12.0, 1 << 40, 2) == 1


def test_a_spec_may_ask_for_a_tighter_bound_never_a_looser_one():
    assert batch.calls_per_window(0.0, 1000.0, 1 << 10, 2, at_least=3) == 3  # CPU hosts: no floor to beat
    assert batch.calls_per_window(400.0, 1000.0, 1 << 10, 2, at_least=1) == 8


def test_batched_windows_are_fewer_but_never_fewer_than_the_minimum_nor_more_than_the_iterations():
    assert batch.timed_windows(100, 1) == 100
    assert batch.timed_windows(100, 8) == batch.MIN_WINDOWS
    assert batch.timed_windows(100, 2) == 50
    assert batch.timed_windows(6, 3) == 6


def test_a_slow_solution_gets_windows_that_fit_the_budget():
    assert batch.within_budget(512, 10.0) == 512
    assert batch.within_budget(512, 1000.0) == int(batch.WINDOW_BUDGET_US // 1000)
    assert batch.within_budget(512, 250_000.0) == 1


def test_windows_cut_short_by_a_warm_up_slower_than_the_timed_calls_are_timed_again():
    # Cut to 1 by a warm-up of 60 ms calls whose timed calls took 1 ms: 50 calls fit, so the pass is timed again.
    assert batch.understated(1, 128, 1000.0) == 50
    # A solution as slow timed as in its warm-up keeps its windows.
    assert batch.understated(1, 128, 60_000.0) is None
    assert batch.understated(40, 128, 1000.0) is None
