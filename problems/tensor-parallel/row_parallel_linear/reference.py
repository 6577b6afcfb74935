"""Row-parallel linear (Megatron RowParallelLinear, no sequence parallelism).

Rank r holds columns r*H/W ... (r+1)*H/W - 1 of the activations (the output of a column-parallel layer) and the
matching rows of the weight; its product is a partial sum of the output, so the partials are all-reduced. As in
Megatron, the replicated bias is added once, after the reduction.
"""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn, shared_generator


def solution(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    partial = x @ w
    dist.all_reduce(partial, op=dist.ReduceOp.SUM)
    return partial + b


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, B: int, H: int, N: int):
    dt = dtype_of(dtype)
    g = rank_generator(seed, rank, device)
    x = randn((B, H // world_size), dt, device, g)
    # Scaled by the full H, so the reduced output is O(1).
    w = randn((H // world_size, N), dt, device, g, scale=H ** -0.5)
    b = randn((N,), dt, device, shared_generator(seed, device))
    return (x, w, b)


def oracle(inputs: list[tuple], B: int, H: int, N: int, **_):
    x0 = inputs[0][0]
    acc = accumulate_dtype(x0.dtype)
    x = torch.cat([inp[0] for inp in inputs], dim=1).to(acc)
    w = torch.cat([inp[1] for inp in inputs], dim=0).to(acc)
    out = (x @ w + inputs[0][2].to(acc)).to(x0.dtype)
    return [out.clone() for _ in inputs]
