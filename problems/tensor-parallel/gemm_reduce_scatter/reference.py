"""Matmul + reduce-scatter: the forward of Megatron's RowParallelLinear under sequence parallelism.

Rank r holds hidden columns r*H/W ... (r+1)*H/W - 1 of the activations for the whole sequence and the matching
weight rows. Its product is a partial sum of the full (S, N) output; the partials are summed and scattered so that
rank r keeps sequence rows r*S/W ... (r+1)*S/W - 1.
"""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn


def solution(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    partial = x @ w
    out = torch.empty((partial.shape[0] // world, partial.shape[1]), dtype=partial.dtype, device=partial.device)
    dist.reduce_scatter_tensor(out, partial, op=dist.ReduceOp.SUM)
    return out


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, S: int, H: int, N: int):
    dt = dtype_of(dtype)
    g = rank_generator(seed, rank, device)
    x = randn((S, H // world_size), dt, device, g)
    # Scaled by the full H, so the reduced output is O(1).
    w = randn((H // world_size, N), dt, device, g, scale=H ** -0.5)
    return (x, w)


def oracle(inputs: list[tuple], S: int, H: int, N: int, **_):
    x0 = inputs[0][0]
    acc = accumulate_dtype(x0.dtype)
    x = torch.cat([inp[0] for inp in inputs], dim=1).to(acc)
    w = torch.cat([inp[1] for inp in inputs], dim=0).to(acc)
    full = (x @ w).to(x0.dtype)
    return [block.clone() for block in full.chunk(len(inputs), dim=0)]
