"""Row-parallel linear in the decode phase (vLLM's RowParallelLinear with input_is_parallel=True).

Rank r holds input features r*K/W ... (r+1)*K/W - 1 of a small batch of tokens and the matching columns of the
weight (stored (out, in), as nn.Linear does). Each rank's product is a partial sum of the output; rank 0 folds the
bias into its partial so that the all-reduce adds it exactly once.
"""

import torch
import torch.distributed as dist
import torch.nn.functional as F_

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn, shared_generator


def solution(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    out = F_.linear(x, weight, bias if dist.get_rank() == 0 else None)
    dist.all_reduce(out, op=dist.ReduceOp.SUM)
    return out


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, B: int, K: int, N: int):
    dt = dtype_of(dtype)
    bias = randn((N,), dt, device, shared_generator(seed, device), scale=0.5)
    g = rank_generator(seed, rank, device)
    k = K // world_size
    x = randn((B, k), dt, device, g)
    # Scaled by the full fan-in, so the summed output is O(1).
    weight = randn((N, k), dt, device, g, scale=K ** -0.5)
    return (x, weight, bias)


def oracle(inputs: list[tuple], B: int, K: int, N: int, **_):
    dt = inputs[0][0].dtype
    acc = accumulate_dtype(dt)
    x = torch.cat([inp[0] for inp in inputs], dim=1).to(acc)
    weight = torch.cat([inp[1] for inp in inputs], dim=1).to(acc)
    out = (x @ weight.T + inputs[0][2].to(acc)).to(dt)
    return [out.clone() for _ in inputs]
