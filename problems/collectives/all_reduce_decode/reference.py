"""All-reduce (sum) of a decode step's activation: every rank ends with the sum over ranks of its (T, H) tensor."""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out, op=dist.ReduceOp.SUM)
    return out


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, T: int, H: int):
    # Each rank's partial of a row-parallel output: O(1/sqrt(W)) so that the sum is O(1).
    return (randn((T, H), dtype_of(dtype), device, rank_generator(seed, rank, device), scale=world_size ** -0.5),)


def oracle(inputs: list[tuple], **_):
    dt = inputs[0][0].dtype
    total = sum(inp[0].to(accumulate_dtype(dt)) for inp in inputs).to(dt)
    return [total.clone() for _ in inputs]
