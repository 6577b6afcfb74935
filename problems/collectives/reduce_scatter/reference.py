"""Reduce-scatter (sum): rank r ends with rows r*M/W ... (r+1)*M/W - 1 of the element-wise sum over ranks."""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn


def solution(x: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    out = torch.empty((x.shape[0] // world, x.shape[1]), dtype=x.dtype, device=x.device)
    dist.reduce_scatter_tensor(out, x.contiguous(), op=dist.ReduceOp.SUM)
    return out


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, M: int, C: int):
    return (randn((M, C), dtype_of(dtype), device, rank_generator(seed, rank, device)),)


def oracle(inputs: list[tuple], M: int, C: int, **_):
    x = inputs[0][0]
    total = sum(inp[0].to(accumulate_dtype(x.dtype)) for inp in inputs).to(x.dtype)
    return [block.clone() for block in total.chunk(len(inputs), dim=0)]
