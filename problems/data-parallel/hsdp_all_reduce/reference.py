"""Hybrid sharded data parallel (HSDP): ranks form shard pairs (rank = replica * 2 + shard_index); gradients are
reduce-scattered within the pair, then the halves are all-reduced across the replicas, and averaged over all ranks."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator

SHARD = 2
_MESHES: dict = {}


def _groups():
    """(shard group, replicate group) of this rank, created once per process group."""
    world, rank = dist.get_world_size(), dist.get_rank()
    key = (id(dist.group.WORLD), world)
    if key not in _MESHES:
        shard = [dist.new_group([r * SHARD + s for s in range(SHARD)]) for r in range(world // SHARD)]
        replicate = [dist.new_group([r * SHARD + s for r in range(world // SHARD)]) for s in range(SHARD)]
        _MESHES[key] = (shard, replicate)
    shard, replicate = _MESHES[key]
    return shard[rank // SHARD], replicate[rank % SHARD]


def solution(grad):
    world = dist.get_world_size()
    shard_group, replicate_group = _groups()
    half = torch.empty(grad.numel() // SHARD, dtype=torch.float32, device=grad.device)
    dist.reduce_scatter_tensor(half, grad.float(), group=shard_group)  # FSDP's reduce_dtype=float32
    dist.all_reduce(half, group=replicate_group)
    return half / world


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, numel: int):
    g = rank_generator(seed, rank, device)
    # Gradient magnitude varies along the flat buffer (different parameters), by about a factor 1.6 either way.
    segment = torch.exp(0.5 * torch.randn((64, 1), generator=g, device=g.device))
    x = torch.randn((64, numel // 64), generator=g, device=g.device) * segment
    return (x.view(-1).to(device=device, dtype=dtype_of(dtype)),)


def oracle(inputs: list[tuple], **_):
    world = len(inputs)
    mean = sum(inp[0].double() for inp in inputs) / world
    halves = mean.chunk(SHARD)
    return [halves[r % SHARD].float() for r in range(world)]
