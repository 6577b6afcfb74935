"""The host's clock against the compiled timer's samples: timing a solution cannot forge from inside its process.

The figure that is ranked comes from the compiled timer in the solution's own ranks, because only a timer beside the
call resolves microseconds on a GPU. But everything in that process, the timer's key included, is within the
solution's reach (tests/evaluator/cheats/timer_key_from_memory.py finds it). What the solution cannot reach is the
host's clock: for every timed iteration the host notes when it had the inputs written where a side reads them (the
judge's ``show`` into the solution's feed slots, ``bshow`` into its own; no side can see them earlier) and when that
side's last rank replied that the call was done and its outputs written. Both sides take the same steps in between,
so the part of that window the samples do not account for (the window less the sample and the spin kernel in front
of the call) is the same protocol overhead for both, give or take noise. A solution whose samples claim less time
than it took has an overhead larger than the baseline's by what it hid.

The bound: a forgery that hides more than the allowance (:func:`allowance_us`: 3 ms on CPU hosts, 0.4 ms on GPU
hosts per window, plus five standard errors of the baseline's overhead) is refused; a smaller one passes, and the
ranked figure stays the timer's. Against a solution of several milliseconds that is a few per cent. Short calls on
small data are timed many to a window (evaluator/host/batch.py), which divides the floor by the calls a window holds;
docs/threat-model.md gives the numbers, and what is still open at small sizes. A refusal by this check
alone is confirmed by a second timing pass before it stands (evaluator/host/timing_pass.py ``_confirmed``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from math import sqrt
from statistics import median
from typing import Any

# The allowance for the solution's overhead beyond the baseline's: a floor for the host's own systematic difference
# between the two sides' round trips, plus NOISE_FACTOR standard errors of the difference of the two medians, the
# error taken from this evaluation's own baseline (the solution's spread is the solution's to inflate, so it is never
# used). Both sides run the same compiled steps inside their windows; what differs is the process each runs in. On
# one H200, identical code read +79 to +257 µs of unaccounted time in windows of 3.5 ms (benchmarks/results/
# eval_wall_2026-12-02_h200-smoke-1_engine.json), so GPU hosts get 400 µs; on two shared CPU cores, 3 ms.
ALLOWANCE_FLOOR_US = {"cpu": 3000.0, "cuda": 400.0}
NOISE_FACTOR = 5.0


def allowance_us(baseline_overheads: list[float], device: str, calls: int = 1) -> float:
    """The most the solution's median overhead may exceed the baseline's, in µs per call, from the baseline's
    overheads per call in windows of ``calls`` calls: the host's floor is per window, so per call it is divided by
    the calls a window holds (evaluator/host/batch.py)."""
    n = len(baseline_overheads)
    centre = median(baseline_overheads)
    mad = median(abs(x - centre) for x in baseline_overheads)
    # A median's standard error is about 1.2533 σ/√n, σ about 1.4826 MAD; the difference of two medians: × √2.
    standard_error = 1.2533 * 1.4826 * mad * sqrt(2.0 / n)
    return ALLOWANCE_FLOOR_US.get(device, ALLOWANCE_FLOOR_US["cuda"]) / max(1, calls) + NOISE_FACTOR * standard_error


@dataclass
class Windows:
    """Per timed iteration, µs by the host's clock from showing a side its inputs to that side's reply; and the
    spin each side put in front of its calls (device time inside the window that no sample contains)."""

    baseline: dict[int, float] = field(default_factory=dict)
    solution: dict[int, float] = field(default_factory=dict)
    calls: int = 1  # calls in each timed window (evaluator/host/batch.py)
    wanted: int = 1  # what the baseline's calls asked for, before the solution's warm-up cut it to fit the budget
    batched_from: int = 0  # the first window that held ``calls`` calls
    first_recorded: int = 0  # the first window recorded (past the warm-up)
    retimed_from: int | None = None  # the calls per window of a pass timed again at this size (timing_pass._retimed)
    end: int = 0  # one past the last window
    baseline_spin_us: float = 0.0
    solution_spin_us: float = 0.0
    # The first part of each window: from writing the inputs to the side's reply that they are on its device.
    baseline_staged: dict[int, float] = field(default_factory=dict)
    solution_staged: dict[int, float] = field(default_factory=dict)
    # Where the host's loop spends its time, ms summed over every iteration by step: what the per-iteration overhead
    # beyond the two windows is made of.
    loop_ms: dict[str, float] = field(default_factory=dict)
    # Per window, whether the baseline was timed first (the order is drawn per window): a diagnosis of whether either
    # side's figure depends on what ran on the device just before it.
    baseline_first: dict[int, bool] = field(default_factory=dict)

    def spent(self, step: str, since: float, now: float) -> None:
        self.loop_ms[step] = self.loop_ms.get(step, 0.0) + (now - since) * 1e3

    def per_call(self) -> Windows:
        """The same windows in µs per call: each timed window's figures divided by the calls it held."""
        k = self.calls

        def each(values: dict[int, float]) -> dict[int, float]:
            return {i: v / k for i, v in values.items()}

        return Windows(
            baseline=each(self.baseline),
            solution=each(self.solution),
            calls=1,
            wanted=self.wanted,
            batched_from=self.batched_from,
            first_recorded=self.first_recorded,
            retimed_from=self.retimed_from,
            end=self.end,
            baseline_spin_us=self.baseline_spin_us / k,
            solution_spin_us=self.solution_spin_us / k,
            baseline_staged=each(self.baseline_staged),
            solution_staged=each(self.solution_staged),
            loop_ms=dict(self.loop_ms),
        )


def cross_check(
    windows: Windows, baseline_us: list[float], solution_us: list[float], warmup: int, device: str, calls: int = 1
) -> tuple[dict[str, Any], str | None]:
    """Returns the host-clock summary for the result document and, when the solution's samples account for too
    little of what the host saw, the reason to reject it. Every figure per call (``Windows.per_call``) of windows
    that held ``calls`` calls each."""
    recorded = sorted(i for i in windows.solution if i >= warmup)
    if not recorded or len(recorded) != len(solution_us) or len(recorded) != len(baseline_us):
        return {"checked": False, "reason": "no timed iterations to compare"}, None
    sol_window = [windows.solution[i] for i in recorded]
    base_window = [windows.baseline[i] for i in recorded]
    base_overheads = [w - b - windows.baseline_spin_us for w, b in zip(base_window, baseline_us)]
    sol_over = median(w - s for w, s in zip(sol_window, solution_us)) - windows.solution_spin_us
    base_over = median(base_overheads)
    unaccounted = sol_over - base_over
    allowance = allowance_us(base_overheads, device, calls)
    if device == "cpu":
        # On CPU hosts the figures are the host's windows (window_figures): a forged sample buys nothing there, so
        # the refusal is kept for gross forgeries only, and must never fall on honest code whose round trips a
        # loaded host stretched (an honest all-reduce once read 3.3 ms unaccounted on two busy cores): it allows at
        # least a whole baseline window per call.
        allowance = max(allowance, median(base_window))
    summary = {
        "checked": True,
        "solution_window_us": median(sol_window),
        "baseline_window_us": median(base_window),
        "solution_overhead_us": sol_over,
        "baseline_overhead_us": base_over,
        "unaccounted_us": unaccounted,
        "allowance_us": allowance,
        "calls_per_window": calls,
        # What the baseline's calls asked for, and the size of a pass timed again because the solution's warm-up cut
        # its windows short (evaluator/host/batch.py).
        "calls_wanted": windows.wanted,
        "retimed_from": windows.retimed_from,
        "solution_staging_us": _median_of(windows.solution_staged, recorded),
        "baseline_staging_us": _median_of(windows.baseline_staged, recorded),
        "loop_ms_per_iteration": {k: round(v / max(1, len(windows.solution)), 3) for k, v in windows.loop_ms.items()},
    }
    if unaccounted <= allowance:
        return summary, None
    return summary, (
        f"the timer's samples account for {unaccounted:.0f} µs per call less of the solution's time "
        f"than the host's clock saw, beyond the baseline's overhead (allowed: {allowance:.0f} µs): work "
        f"the solution does in its windows outside its calls (threads, handlers) or samples it writes "
        f"itself; a solution's work belongs inside its call, and it must not write to the evaluator's "
        f"timer"
    )


def window_figures(windows: Windows, warmup: int) -> tuple[list[float], list[float]]:
    """Per timed iteration, each side's time by the host's clock alone: its window less the judge's staging of its
    inputs (both measured on the host, the staging reported by the judge, neither by the solution's process). The
    figure on CPU hosts, where the in-process clock and the timer's key are within the solution's reach and its
    samples could claim anything the allowance lets pass: no sample enters these figures, so none can be bought with
    a forgery. What is left in each is the call and the side's own command-and-reply path (the rank's compiled loop,
    the judge's Python one, which is the slower), so identical code reads at or slightly above 1 on CPU profiles."""
    recorded = sorted(i for i in windows.solution if i >= warmup)
    if not recorded or any(
        i not in windows.baseline or i not in windows.baseline_staged or i not in windows.solution_staged
        for i in recorded
    ):
        return [], []
    return (
        [max(1.0, windows.baseline[i] - windows.baseline_staged[i]) for i in recorded],
        [max(1.0, windows.solution[i] - windows.solution_staged[i]) for i in recorded],
    )


def _median_of(values: dict[int, float], recorded: list[int]) -> float | None:
    picked = [values[i] for i in recorded if i in values]
    return median(picked) if picked else None
