"""Gather to rank 0: rank 0 returns every rank's tensor stacked along dim 0; other ranks return an empty tensor."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randn


def solution(x: torch.Tensor) -> torch.Tensor:
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        out = torch.empty((world * x.shape[0], x.shape[1]), dtype=x.dtype, device=x.device)
        dist.gather(x.contiguous(), list(out.chunk(world, dim=0)), dst=0)
        return out
    dist.gather(x.contiguous(), None, dst=0)
    return x.new_empty((0, x.shape[1]))


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, R: int, C: int):
    return (randn((R, C), dtype_of(dtype), device, rank_generator(seed, rank, device)),)


def oracle(inputs: list[tuple], R: int, C: int, **_):
    x = inputs[0][0]
    return [torch.cat([inp[0] for inp in inputs], dim=0)] + [x.new_empty((0, C)) for _ in inputs[1:]]
