"""Broadcast from rank 0: every rank ends with a copy of rank 0's tensor."""

import torch
import torch.distributed as dist

from problems.common import dtype_of, rank_generator, randn


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone(memory_format=torch.contiguous_format)
    dist.broadcast(out, src=0)
    return out


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, R: int, C: int):
    # Non-root ranks get their own random data, so returning one's own input is caught.
    return (randn((R, C), dtype_of(dtype), device, rank_generator(seed, rank, device)),)


def oracle(inputs: list[tuple], R: int, C: int, **_):
    return [inputs[0][0].clone() for _ in inputs]
