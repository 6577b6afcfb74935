"""Matmul + all-reduce, as in vLLM's RowParallelLinear (the attention output projection of a TP inference engine).

Rank r holds input features r*K/W ... (r+1)*K/W - 1 of the activations and the same slice of every output row of
the weight, stored output-major as (N, K/W) the way F.linear expects. Its product is a partial sum; the partials
are all-reduced.
"""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn


def solution(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    out = torch.nn.functional.linear(x, w)
    dist.all_reduce(out, op=dist.ReduceOp.SUM)
    return out


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, M: int, K: int, N: int):
    dt = dtype_of(dtype)
    g = rank_generator(seed, rank, device)
    x = randn((M, K // world_size), dt, device, g)
    # Scaled by the full K, so the reduced output is O(1).
    w = randn((N, K // world_size), dt, device, g, scale=K ** -0.5)
    return (x, w)


def oracle(inputs: list[tuple], M: int, K: int, N: int, **_):
    x0 = inputs[0][0]
    acc = accumulate_dtype(x0.dtype)
    x = torch.cat([inp[0] for inp in inputs], dim=1).to(acc)
    w = torch.cat([inp[1] for inp in inputs], dim=1).to(acc)
    out = (x @ w.T).to(x0.dtype)
    return [out.clone() for _ in inputs]
