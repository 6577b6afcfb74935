"""Helpers every reference.py uses to make inputs that are random, seeded and consistent across ranks.

Data that every rank holds a copy of (weights, a shared table) is drawn from ``shared_generator(seed)``; data a
group of ranks holds alike, from ``group_generator(seed, group)``; data that belongs to one rank, from
``rank_generator(seed, rank)`` by that rank alone, never sliced out of a shared draw: a rank can recover a
generator's state from the values it holds (the CPU's Mersenne Twister is linear in its output), and with it every
other part of that draw, its peers' inputs, without any exchange (tests/problems/test_audit.py). Each is the same on
every rank and in the oracle, which calls make_inputs for each rank on one device.
"""

from __future__ import annotations

from typing import Any

import torch

from problems.seeds import seed_generator

_ONE_PASS = (torch.float32, torch.bfloat16, torch.float16)


def dtype_of(name: str) -> torch.dtype:
    return getattr(torch, name)


def shared_generator(seed: int, device: torch.device | str = "cpu") -> torch.Generator:
    return seed_generator(torch.Generator(device=device), "arena-shared", seed)


def rank_generator(seed: int, rank: int, device: torch.device | str = "cpu") -> torch.Generator:
    return seed_generator(torch.Generator(device=device), "arena-rank", seed, rank)


def group_generator(seed: int, group: Any, device: torch.device | str = "cpu") -> torch.Generator:
    """For data a group of ranks holds alike and other groups do not (a data-parallel replica's micro-batch, a
    node-local shard replicated across nodes, what two peers both know of the traffic between them): a stream of its
    own, so no rank's own draws share it. ``group`` names the group (a number, or a tuple such as a pair of ranks)."""
    return seed_generator(torch.Generator(device=device), "arena-group", seed, group)


def randn(
    shape: tuple[int, ...] | list[int],
    dtype: torch.dtype,
    device: torch.device | str,
    generator: torch.Generator,
    scale: float = 1.0,
) -> torch.Tensor:
    """Normal values drawn in float32 on the generator's device, then cast, so every dtype sees the same draw."""
    if generator.device.type == "cuda" and dtype in _ONE_PASS:
        # torch's CUDA normal kernel draws in float32 and scales before it rounds to the tensor's dtype: the same
        # values as below in one pass over the data instead of four (the judge draws every timed call's inputs, over
        # a gigabyte a call at some problems' bench sizes; benchmarks/results say where this was checked).
        drawn = torch.empty(tuple(shape), dtype=dtype, device=generator.device).normal_(0.0, scale, generator=generator)
        return drawn.to(device=device)
    x = torch.randn(tuple(shape), generator=generator, device=generator.device, dtype=torch.float32)
    if scale != 1.0:
        x.mul_(scale)
    return x.to(device=device, dtype=dtype)


def randint(
    low: int,
    high: int,
    shape: tuple[int, ...] | list[int],
    device: torch.device | str,
    generator: torch.Generator,
    dtype: torch.dtype = torch.int64,
) -> torch.Tensor:
    x = torch.randint(low, high, tuple(shape), generator=generator, device=generator.device, dtype=torch.int64)
    return x.to(device=device, dtype=dtype)


def accumulate_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype an oracle sums in: float64 on the CPU for reduced precision, so the oracle is the exact answer."""
    return torch.float64 if dtype.is_floating_point else dtype


ROUTER_BIAS = 0.3  # spread of the per-expert logit bias: the busiest expert gets ~3x the mean load, a rank ~1.4x


def skewed_router(
    seed: int,
    rank: int,
    device: torch.device | str,
    tokens: int,
    experts: int,
    topk: int,
    bias_scale: float = ROUTER_BIAS,
) -> tuple[Any, torch.Generator]:
    """One rank's MoE router decision: distinct top-k experts per token from logits with a per-expert bias shared
    by every rank, so some experts are far more popular than others (uneven counts, as real routers give).

    Returns torch.topk's (values, indices) and the rank's generator, from which the rest of its inputs are drawn.
    """
    g = rank_generator(seed, rank, device)
    return router_logits(seed, g, device, tokens, experts, bias_scale).topk(topk, dim=-1), g


def router_logits(
    seed: int,
    generator: torch.Generator,
    device: torch.device | str,
    tokens: int,
    experts: int,
    bias_scale: float = ROUTER_BIAS,
) -> torch.Tensor:
    """Router logits: a per-expert bias every rank shares (so some experts are far more popular than others) plus
    normal noise from ``generator``."""
    bias = randn((experts,), torch.float32, device, shared_generator(seed, device), scale=bias_scale)
    return randn((tokens, experts), torch.float32, device, generator) + bias


def peer_routing(
    seed: int, rank: int, device: torch.device | str, tokens: int, experts: int, topk: int
) -> torch.Tensor:
    """Rank ``rank``'s top-k experts per token, from a stream of that rank's routing alone (group_generator): its
    peers rebuild it (to size what they receive) and it gives them nothing else of the rank's."""
    return (
        router_logits(seed, group_generator(seed, ("routing", rank), device), device, tokens, experts)
        .topk(topk, dim=-1)
        .indices
    )


def node_layout(world_size: int, ranks_per_node: int) -> tuple[int, int]:
    """(nodes, ranks_per_node) of an inter-node problem: ranks are grouped into nodes of ``ranks_per_node``
    consecutive ranks, so rank r sits on node ``r // ranks_per_node`` as local rank ``r % ranks_per_node``.

    Inter-node problems take ``ranks_per_node`` as a preset parameter (small: 2, bench: 4, i.e. two nodes at
    W = 4 and W = 8) and hand it to ``solution`` as a 0-dim int64 input, so make_inputs, the oracle and every
    solution agree on the layout without reading the environment. On a multi-node profile it equals the launcher's
    ``LOCAL_WORLD_SIZE``.
    """
    if ranks_per_node < 1 or world_size % ranks_per_node:
        raise ValueError(f"{world_size} ranks cannot be grouped into nodes of {ranks_per_node}")
    return world_size // ranks_per_node, ranks_per_node


_NODE_GROUPS: dict = {}


def node_groups(ranks_per_node: int):
    """This rank's (intra-node group, inter-node group) for the current default process group: the ranks of its
    node, and the ranks with its local index on every node. Made once per process group and layout (every rank
    must call it the first time, as dist.new_group requires), then reused, so timing a reference does not time
    group creation."""
    import torch.distributed as dist

    world = dist.group.WORLD
    key = (id(world), ranks_per_node)
    cached = _NODE_GROUPS.get(key)
    if cached is not None and cached[0] is world:
        return cached[1], cached[2]
    nodes, per_node = node_layout(dist.get_world_size(), ranks_per_node)
    intra, _ = dist.new_subgroups_by_enumeration([list(range(n * per_node, (n + 1) * per_node)) for n in range(nodes)])
    inter, _ = dist.new_subgroups_by_enumeration([list(range(l, nodes * per_node, per_node)) for l in range(per_node)])
    _NODE_GROUPS[key] = (world, intra, inter)
    return intra, inter
