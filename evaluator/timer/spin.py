"""How long the spin kernel in front of each timed call lasts: one rule for the judge, the sandboxed ranks and the
host's cross-check (which subtracts it from what its clock saw). Standard library only."""

from __future__ import annotations

SPIN_FLOOR_US = 200.0
# GPU hosts with device feeds: the least part of the judge's spin a timed call's stream must have waited at its gate
# (evaluator/timer/_engine.cpp pass_gate) before its inputs came. Less, and the gate was armed by something other than
# the call's stream as it arrived (a forged token) while that stream was held elsewhere, so the inputs were there
# before the call's start. Half: the spin runs by the device's clock, and its wait and release each take some µs.
GATE_HELD = 0.5


def spin_us(launch_us: list[float], cuda: bool) -> float:
    """The spin must outlast the host's launch of everything queued behind it, or launch gaps leak into the figure:
    three times the median launch time of the warm-up calls, plus 50 µs, and never under the floor."""
    if not cuda:
        return 0.0
    if not launch_us:
        return SPIN_FLOOR_US
    return max(SPIN_FLOOR_US, 3.0 * sorted(launch_us)[len(launch_us) // 2] + 50.0)
