"""Reduce-scatter of row-parallel partial outputs along the token dim, then RMSNorm of each rank's tokens.

Under Megatron's sequence parallelism a row-parallel linear ends with a reduce-scatter instead of an all-reduce:
every rank holds a partial sum of the full (T, H) output, and rank r keeps the complete sum of tokens
r*T/W ... (r+1)*T/W - 1, which then goes through the next layer's RMSNorm.
"""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn, shared_generator

EPS = 1e-6


def solution(partial: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    block = torch.empty((partial.shape[0] // world, partial.shape[1]), dtype=partial.dtype, device=partial.device)
    dist.reduce_scatter_tensor(block, partial.contiguous())
    xf = block.float()
    return (xf * torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + EPS) * weight.float()).to(partial.dtype)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, T: int, H: int):
    dt = dtype_of(dtype)
    shared = shared_generator(seed, device)
    # Rows of very different sizes, the same on every rank's partial, so a norm of anything but the full sum is off.
    row_scale = randn((T, 1), torch.float32, device, shared, scale=0.7).exp()
    weight = (1.0 + randn((H,), torch.float32, device, shared, scale=0.1)).to(dt)
    g = rank_generator(seed, rank, device)
    partial = (randn((T, H), torch.float32, device, g) * row_scale).to(dt)
    return (partial, weight)


def oracle(inputs: list[tuple], T: int, H: int, **_):
    dt = inputs[0][0].dtype
    acc = accumulate_dtype(dt)
    x = sum(inp[0].to(acc) for inp in inputs)
    w = inputs[0][1].to(acc)
    y = (x / torch.sqrt(x.square().mean(dim=-1, keepdim=True) + EPS) * w).to(dt)
    return [block.clone() for block in y.chunk(len(inputs), dim=0)]
