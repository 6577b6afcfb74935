"""The time no implementation can beat on a hardware profile, from a problem's bytes and FLOPs.

Three ceilings, each a lower bound on its own: bytes each rank must move over the interconnect at the profile's
nominal per-GPU link bandwidth (not NCCL's measured figure: a better kernel may beat NCCL, never the wires),
HBM bytes at the memory bandwidth, and FLOPs at the dense peak for the dtype. The roofline is the largest of the
three; overlap can hide the others behind it, so the sum would not be a safe bound.
"""

from __future__ import annotations

from typing import Any

from evaluator.contract.profiles import HardwareProfile
from problems.registry import Problem

# A measured time below the roofline by more than this margin is physically impossible; the margin absorbs
# clock-reading noise only, never a real effect.
IMPOSSIBLE_MARGIN = 0.9


def roofline(problem: Problem, profile: HardwareProfile, world_size: int,
             overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    preset = profile.preset
    terms = problem.roofline_terms(world_size, preset, overrides)
    dtype = problem.presets[preset].dtype
    link_s = terms["link_bytes_per_rank"] / (profile.link_gbps * 1e9)
    if terms["link_bytes_per_rank"] > 0:
        link_s += profile.link_latency_us * 1e-6
    hbm_s = terms["hbm_bytes_per_rank"] / (profile.hbm_gbps * 1e9)
    peak = profile.peak_tflops.get(dtype, max(profile.peak_tflops.values()))
    compute_s = terms["flops_per_rank"] / (peak * 1e12)
    bounds = {"link": link_s, "hbm": hbm_s, "compute": compute_s}
    bound = max(bounds, key=bounds.get)
    return {
        "time_us": bounds[bound] * 1e6,
        "bound": bound,
        "link_us": link_s * 1e6,
        "hbm_us": hbm_s * 1e6,
        "compute_us": compute_s * 1e6,
        "terms": terms,
        "ceilings": {"link_gbps": profile.link_gbps, "hbm_gbps": profile.hbm_gbps, "peak_tflops": peak},
    }


def fraction(roofline_us: float, measured_us: float) -> float:
    """Share of the roofline reached: 1.0 means as fast as physics allows."""
    return roofline_us / measured_us if measured_us > 0 else float("inf")


def impossible(roofline_us: float, measured_us: float) -> bool:
    return measured_us < roofline_us * IMPOSSIBLE_MARGIN
