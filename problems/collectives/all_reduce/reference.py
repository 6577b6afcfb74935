"""All-reduce (sum): every rank ends with the element-wise sum of every rank's tensor."""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out, op=dist.ReduceOp.SUM)
    return out


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, numel: int):
    g = rank_generator(seed, rank, device)
    return (randn((numel,), dtype_of(dtype), device, g),)


def oracle(inputs: list[tuple], numel: int, **_):
    x = inputs[0][0]
    total = sum(inp[0].to(accumulate_dtype(x.dtype)) for inp in inputs).to(x.dtype)
    return [total.clone() for _ in inputs]
