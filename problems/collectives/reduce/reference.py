"""Reduce (sum) to rank 0: rank 0 returns the element-wise sum over ranks; every other rank returns an empty tensor."""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone(memory_format=torch.contiguous_format)
    dist.reduce(out, dst=0, op=dist.ReduceOp.SUM)
    if dist.get_rank() != 0:
        # The buffer's contents on non-root ranks are unspecified after a reduce; return a fixed, empty answer.
        return x.new_empty((0, x.shape[1]))
    return out


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, R: int, C: int):
    return (randn((R, C), dtype_of(dtype), device, rank_generator(seed, rank, device)),)


def oracle(inputs: list[tuple], R: int, C: int, **_):
    x = inputs[0][0]
    total = sum(inp[0].to(accumulate_dtype(x.dtype)) for inp in inputs).to(x.dtype)
    return [total] + [x.new_empty((0, C)) for _ in inputs[1:]]
