"""TensorRT-LLM's fused all-reduce + residual add + RMSNorm, written as three separate steps.

Every rank holds a partial sum of a row-parallel layer's output and the same residual stream. The partials are
all-reduced, added to the residual (the new residual stream, returned), and the sum is RMS-normalized for the next
layer.
"""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn, shared_generator

EPS = 1e-6


def solution(partial: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor):
    total = partial.clone()
    dist.all_reduce(total)
    residual_out = (residual.float() + total.float()).to(residual.dtype)
    xf = residual_out.float()
    normed = (xf * torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + EPS) * weight.float()).to(residual.dtype)
    return normed, residual_out


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, T: int, H: int):
    dt = dtype_of(dtype)
    shared = shared_generator(seed, device)
    # Residual rows of different sizes, so the norm's per-row scale matters.
    row_scale = randn((T, 1), torch.float32, device, shared, scale=0.5).exp()
    residual = (randn((T, H), torch.float32, device, shared) * row_scale).to(dt)
    weight = (1.0 + randn((H,), torch.float32, device, shared, scale=0.1)).to(dt)
    partial = randn((T, H), dt, device, rank_generator(seed, rank, device), scale=0.5)
    return (partial, residual, weight)


def oracle(inputs: list[tuple], T: int, H: int, **_):
    dt = inputs[0][0].dtype
    acc = accumulate_dtype(dt)
    res = inputs[0][1].to(acc) + sum(inp[0].to(acc) for inp in inputs)
    normed = res / torch.sqrt(res.square().mean(dim=-1, keepdim=True) + EPS) * inputs[0][2].to(acc)
    return [(normed.to(dt), res.to(dt)) for _ in inputs]
