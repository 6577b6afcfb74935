"""All-to-all with equal splits: block j of rank i's rows goes to rank j, landing as block i of its output."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randn


def solution(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x, memory_format=torch.contiguous_format)
    dist.all_to_all_single(out, x.contiguous())
    return out


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, M: int, C: int):
    return (randn((M, C), dtype_of(dtype), device, rank_generator(seed, rank, device)),)


def oracle(inputs: list[tuple], M: int, C: int, **_):
    world = len(inputs)
    blocks = [inp[0].chunk(world, dim=0) for inp in inputs]
    return [torch.cat([blocks[src][dst] for src in range(world)], dim=0) for dst in range(world)]
