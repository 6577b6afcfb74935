"""The time no implementation can beat on a hardware profile, from a problem's bytes and FLOPs.

Three ceilings, each a lower bound on its own: bytes each rank must move over the interconnect at the profile's
nominal per-GPU link bandwidth (not NCCL's measured figure: a better kernel may beat NCCL, never the wires),
HBM bytes at the memory bandwidth, and FLOPs at the dense peak for the dtype. The roofline is the largest of the
three; overlap can hide the others behind it, so the sum would not be a safe bound.

On a profile of more than one node a fourth ceiling applies where the problem gives ``internode_bytes_per_rank``
(the bytes the busiest rank must send to other nodes): those bytes at the profile's per-GPU inter-node bandwidth.
There the link term is bounded by NVLink and the network together (``link_bytes_per_rank`` counts every byte a
rank sends, and a GPU can drive its NVLink and its NIC at once), so each ceiling stays a lower bound on its own.
On one node the inter-node term is ignored: those bytes then travel over NVLink and are in the link term already.

One rank has no peer, so nothing crosses a link whatever the problem's formula says: formulas are written for the
world sizes a problem lists (a broadcast's ``R * C * E`` holds from two ranks up), and the one-rank smoke profiles
run them at one, where only HBM and compute bound the time.
"""

from __future__ import annotations

from typing import Any, Mapping

from evaluator.contract.profiles import HardwareProfile
from problems.registry import Problem

# A measured time below the roofline by more than this margin is physically impossible; the margin absorbs
# clock-reading noise only, never a real effect.
IMPOSSIBLE_MARGIN = 0.9


def roofline(
    problem: Problem, profile: HardwareProfile, world_size: int, overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    preset = profile.preset
    terms = problem.roofline_terms(world_size, preset, overrides)
    return roofline_of(terms, problem.presets[preset].dtype, profile, world_size)


def roofline_of(terms: Mapping[str, float], dtype: str, profile: HardwareProfile, world_size: int) -> dict[str, Any]:
    """The roofline of a problem's ``terms`` (its bytes and FLOPs at one size and world size) in ``dtype``: what an
    evaluation uses, its problem already sized (``problems.registry.sized``)."""
    nodes = getattr(profile, "nodes", 1)
    internode_gbps = getattr(profile, "internode_gbps", None) or 0.0
    multi_node = nodes > 1 and internode_gbps > 0
    link_gbps = profile.link_gbps + (internode_gbps if multi_node else 0.0)
    link_bytes = terms["link_bytes_per_rank"] if world_size > 1 else 0.0
    link_s = link_bytes / (link_gbps * 1e9)
    if link_bytes > 0:
        link_s += profile.link_latency_us * 1e-6
    internode_bytes = terms.get("internode_bytes_per_rank", 0.0) if multi_node else 0.0
    internode_s = internode_bytes / (internode_gbps * 1e9) if multi_node else 0.0
    if internode_bytes > 0:
        internode_s += getattr(profile, "internode_latency_us", 0.0) * 1e-6
    hbm_s = terms["hbm_bytes_per_rank"] / (profile.hbm_gbps * 1e9)
    peak = profile.peak_tflops.get(dtype, max(profile.peak_tflops.values()))
    compute_s = terms["flops_per_rank"] / (peak * 1e12)
    bounds = {"link": link_s, "hbm": hbm_s, "compute": compute_s}
    if multi_node:
        bounds["internode"] = internode_s
    bound = max(bounds, key=bounds.get)
    result = {
        "time_us": bounds[bound] * 1e6,
        "bound": bound,
        "link_us": link_s * 1e6,
        "hbm_us": hbm_s * 1e6,
        "compute_us": compute_s * 1e6,
        "terms": dict(terms),
        "ceilings": {"link_gbps": profile.link_gbps, "hbm_gbps": profile.hbm_gbps, "peak_tflops": peak},
    }
    if multi_node:
        result["internode_us"] = internode_s * 1e6
        result["ceilings"].update(internode_gbps=internode_gbps, nodes=nodes)
    return result


def fraction(roofline_us: float, measured_us: float) -> float:
    """Share of the roofline reached: 1.0 means as fast as physics allows."""
    return roofline_us / measured_us if measured_us > 0 else float("inf")


def impossible(roofline_us: float, measured_us: float) -> bool:
    return measured_us < roofline_us * IMPOSSIBLE_MARGIN
