"""How many calls one timed window holds.

The host's clock bounds work a solution hides outside its samples by an allowance per window (evaluator/host/
host_clock.py): a floor for the host's own jitter, 0.4 ms on GPU hosts, plus the spread of the baseline's overhead.
Against a call of 12 µs that floor is 33 calls' worth, so at small sizes it bounded nothing. A window of K calls back
to back, each on inputs of its own, holds K times the hidden work while the host's jitter, which comes from the
window's round trip and not from the calls in it, does not grow: the bound per call is the allowance divided by K.
K is chosen from the baseline's own warm-up (the judge's, never the solution's claims) so that the floor is at most
BOUND_FRACTION of one baseline call, within the limits below. Standard library only."""

from __future__ import annotations

from math import ceil

# Off: a host times several calls to a window only when a spec asks for it (EvalSpec.min_window_calls). On one H200
# the windows did not bound a forger of short calls (the noise of each call's own staging, not the floor, set the
# bound). A window's last call doing its earlier calls' work is closed (the engine takes each call's outputs as it
# returns, timed by events per call on GPUs). Identical code in windows of 128 calls passed 4 of 4 on one H100 once
# the judge's work on the baseline's outputs left the solution's window (it had been refused in 4 to 6 of 6); with
# windows on, the cheat suite refused an honest solution whose launch path is long against its device work (a few µs
# a call is all a window allows), so they stay off. docs/protocol.md has the figures.
AUTOMATIC = False
# Hidden work worth more than this fraction of a baseline call is refused, where the limits below allow a window
# large enough.
BOUND_FRACTION = 0.05
MAX_CALLS = 1024  # calls in one window: the judge draws and checks each call's inputs and outputs in Python
# Inputs and outputs of one window, through the feed and output slots. Their copies are per call, so whatever
# differs between the two sides' copies grows with the calls in a window, as the floor does not: on one H200, windows
# of seven 32 MiB calls of the bench all-reduce read 385 µs per call unaccounted for identical code (refused), where
# one call per window reads about 100 µs. Batches are for calls whose data are small.
MAX_BYTES = 4 << 20
MAX_VALUES = 4096  # inputs of one window (the engine's MAX_FRAME_ENTRIES)
MIN_WINDOWS = 30  # timed windows when they are batched: each window's median is over many calls already
# A window of the solution's calls lasts about this long at most, by the host's clock on its warm-up: a solution far
# slower than the baseline gets fewer calls per window, so its evaluation still ends within its time limit.
WINDOW_BUDGET_US = 50_000.0


def calls_per_window(
    floor_us: float, call_us: float, bytes_per_call: int, values_per_call: int, at_least: int = 1
) -> int:
    """K for a baseline call of ``call_us`` (device time on GPU hosts) whose inputs and outputs take
    ``bytes_per_call`` and ``values_per_call`` values, against an allowance floor of ``floor_us`` per window; never
    fewer than ``at_least`` (a spec may ask for a tighter bound, never a looser one) unless the limits forbid it."""
    wanted = ceil(floor_us / (BOUND_FRACTION * max(call_us, 0.01)))
    limit = min(MAX_CALLS, MAX_BYTES // max(bytes_per_call, 1), MAX_VALUES // max(values_per_call, 1))
    return max(1, min(max(wanted, at_least), limit))


def within_budget(calls: int, solution_call_us: float) -> int:
    """At most ``calls``, and no more than the solution's calls of ``solution_call_us`` (by the host's clock) that
    fit in WINDOW_BUDGET_US. A solution slow in its warm-up only, to be timed in small windows, is timed again
    (:func:`understated`)."""
    return max(1, min(calls, int(WINDOW_BUDGET_US // max(solution_call_us, 1.0))))


def understated(chosen: int, wanted: int, timed_call_us: float) -> int | None:
    """The calls per window a pass timed in windows of ``chosen`` calls (``wanted`` before the budget cut them) should
    have had, by the solution's calls as its timed windows measured them; None when ``chosen`` stands. Windows cut
    short by a warm-up that was slower than the calls that followed are timed again at the size they allow."""
    allowed = within_budget(wanted, timed_call_us)
    return allowed if allowed >= 2 * chosen else None


def timed_windows(iterations: int, calls: int) -> int:
    """How many timed windows of ``calls`` calls stand for ``iterations`` single calls: fewer windows when they are
    batched, never fewer than MIN_WINDOWS (nor more than ``iterations``, the seeds drawn for them)."""
    if calls <= 1:
        return iterations
    return min(iterations, max(MIN_WINDOWS, ceil(iterations / calls)))
