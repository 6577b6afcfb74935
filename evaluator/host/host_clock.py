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

The check is coarse by nature: a forgery smaller than the allowance (the noise of a host round trip, plus a share of
the window) passes, and the ranked figure stays the timer's. Forgeries of that size are bounded by the allowance; a
speedup that only such a forgery could produce is also bounded by the roofline check."""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median
from typing import Any

# The allowance for the solution's overhead beyond the baseline's: an absolute floor for the noise of host round
# trips on each kind of host, plus a share of the baseline's window (large inputs make both windows noisier). On
# two shared CPU cores honest solutions read up to 2.5 ms over 10 iterations (benchmarks/results/cheat_suite_
# 2026-12-01_cpu-gloo-2.md), so CPU hosts get 10 ms: their figures are coarse anyway. On one H200, honest solutions
# read −10.5 to +1.8 ms in windows of 39–103 ms and −0.06 to +0.39 ms in windows of 3–4 ms (benchmarks/results/
# gpu_smoke_2026-12-01_h200_rev5.md): the share covers both with room; the floor matters only for tiny windows.
ALLOWANCE_FLOOR_US = {"cpu": 10000.0, "cuda": 150.0}
ALLOWANCE_SHARE = 0.25


@dataclass
class Windows:
    """Per timed iteration, µs by the host's clock from showing a side its inputs to that side's reply; and the
    spin each side put in front of its calls (device time inside the window that no sample contains)."""
    baseline: dict[int, float] = field(default_factory=dict)
    solution: dict[int, float] = field(default_factory=dict)
    baseline_spin_us: float = 0.0
    solution_spin_us: float = 0.0
    # The first part of each window: from writing the inputs to the side's reply that they are on its device.
    baseline_staged: dict[int, float] = field(default_factory=dict)
    solution_staged: dict[int, float] = field(default_factory=dict)
    # Where the host's loop spends its time, ms summed over every iteration by step: what the per-iteration overhead
    # beyond the two windows is made of.
    loop_ms: dict[str, float] = field(default_factory=dict)

    def spent(self, step: str, since: float, now: float) -> None:
        self.loop_ms[step] = self.loop_ms.get(step, 0.0) + (now - since) * 1e3


def cross_check(windows: Windows, baseline_us: list[float], solution_us: list[float], warmup: int,
                device: str) -> tuple[dict[str, Any], str | None]:
    """Returns the host-clock summary for the result document and, when the solution's samples account for too
    little of what the host saw, the reason to reject it."""
    recorded = sorted(i for i in windows.solution if i >= warmup)
    if not recorded or len(recorded) != len(solution_us) or len(recorded) != len(baseline_us):
        return {"checked": False, "reason": "no timed iterations to compare"}, None
    sol_window = [windows.solution[i] for i in recorded]
    base_window = [windows.baseline[i] for i in recorded]
    sol_over = median(w - s for w, s in zip(sol_window, solution_us)) - windows.solution_spin_us
    base_over = median(w - b for w, b in zip(base_window, baseline_us)) - windows.baseline_spin_us
    unaccounted = sol_over - base_over
    allowance = ALLOWANCE_FLOOR_US.get(device, ALLOWANCE_FLOOR_US["cuda"]) + ALLOWANCE_SHARE * median(base_window)
    summary = {"checked": True, "solution_window_us": median(sol_window), "baseline_window_us": median(base_window),
               "solution_overhead_us": sol_over, "baseline_overhead_us": base_over,
               "unaccounted_us": unaccounted, "allowance_us": allowance,
               "solution_staging_us": _median_of(windows.solution_staged, recorded),
               "baseline_staging_us": _median_of(windows.baseline_staged, recorded),
               "loop_ms_per_iteration": {k: round(v / max(1, len(windows.solution)), 3)
                                         for k, v in windows.loop_ms.items()}}
    if unaccounted <= allowance:
        return summary, None
    return summary, (f"the timer's samples account for {unaccounted:.0f} µs per call less of the solution's time "
                     f"than the host's clock saw, beyond the baseline's overhead (allowed: {allowance:.0f} µs): a "
                     f"solution must not write to the evaluator's timer")


def _median_of(values: dict[int, float], recorded: list[int]) -> float | None:
    picked = [values[i] for i in recorded if i in values]
    return median(picked) if picked else None
