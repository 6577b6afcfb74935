"""The roofline bounds inter-node bytes by the network on two-node profiles, and ignores them on one node."""

import dataclasses

import pytest

from evaluator.contract.profiles import PROFILES, get_profile
from evaluator.analysis.roofline import roofline
from problems.registry import Problem, Preset, Tolerance


def _problem(internode: str | None) -> Problem:
    terms = {"link_bytes_per_rank": "N * E", "hbm_bytes_per_rank": "0", "flops_per_rank": "0"}
    if internode is not None:
        terms["internode_bytes_per_rank"] = internode
    presets = {name: Preset(name, "bfloat16", {"N": 1 << 26}) for name in ("small", "bench")}
    return Problem(
        id="collectives/x",
        path=None,
        title="x",
        category="collectives",
        version=1,
        codebase="c",
        function="f",
        world_sizes=(8,),
        presets=presets,
        tolerances={"bfloat16": Tolerance(0, 0)},
        roofline=terms,
        statement="s",
        content_hash="h",
    )


def test_two_node_profiles_group_ranks_into_nodes():
    assert get_profile("h200-2x4").nodes == 2 and get_profile("h200-2x4").ranks_per_node == 4
    cpu = get_profile("cpu-gloo-2x2")
    assert (cpu.world_size, cpu.nodes, cpu.backend, cpu.preset) == (4, 2, "gloo", "small")
    assert [cpu.node_of(r) for r in range(4)] == [0, 0, 1, 1]
    assert all(p.internode_gbps is None for p in PROFILES.values() if p.nodes == 1)
    assert get_profile("h200-2x4").internode_gbps == 50.0 and "assumption" in get_profile("h200-2x4").description


def test_a_profile_whose_ranks_do_not_split_into_its_nodes_is_refused():
    with pytest.raises(ValueError, match="cannot be split"):
        dataclasses.replace(get_profile("h200-2x4"), nodes=3)
    with pytest.raises(ValueError, match="needs internode_gbps"):
        dataclasses.replace(get_profile("h200-2x4"), internode_gbps=None)


def test_internode_bytes_bound_the_time_on_two_nodes():
    profile = get_profile("h200-2x4")
    nbytes = (1 << 26) * 2
    r = roofline(_problem("N * E / 2"), profile, 8)
    assert r["bound"] == "internode"
    assert r["internode_us"] == pytest.approx(nbytes / 2 / 50e9 * 1e6 + profile.internode_latency_us)
    # Every byte may share NVLink and the NIC, so the link ceiling is their sum.
    assert r["link_us"] == pytest.approx(nbytes / 528e9 * 1e6 + profile.link_latency_us)
    assert r["time_us"] == r["internode_us"] and r["ceilings"]["internode_gbps"] == 50.0


def test_internode_term_is_ignored_on_one_node_and_optional_on_two():
    one_node = roofline(_problem("N * E / 2"), get_profile("h200-nvlink-8"), 8)
    assert one_node["bound"] == "link" and "internode_us" not in one_node
    without = roofline(_problem(None), get_profile("h200-2x4"), 8)
    assert without["internode_us"] == 0.0 and without["bound"] == "link"


def test_one_rank_has_no_link_to_bound_it():
    # A broadcast's link bytes (R * C * E) hold from two ranks up; at one rank an honest copy runs at HBM speed,
    # and a link floor there refused one as physically impossible.
    problem = dataclasses.replace(
        _problem(None),
        roofline={"link_bytes_per_rank": "N * E", "hbm_bytes_per_rank": "2 * N * E", "flops_per_rank": "0"},
    )
    smoke = get_profile("h200-smoke-1", allow_smoke=True)
    one = roofline(problem, smoke, 1)
    assert one["link_us"] == 0.0 and one["bound"] == "hbm"
    assert one["time_us"] == pytest.approx(2 * (1 << 26) * 2 / 4800e9 * 1e6)
    two = roofline(problem, dataclasses.replace(smoke, world_size=2), 2)
    assert two["bound"] == "link" and two["link_us"] == pytest.approx((1 << 26) * 2 / 478e9 * 1e6)
