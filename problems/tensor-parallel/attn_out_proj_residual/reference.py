"""Megatron's attention output projection under sequence parallelism, with the bias-dropout-add that follows.

Rank r holds the attention output of its heads (hidden columns r*H/W ... (r+1)*H/W - 1) for the whole sequence, the
matching rows of the output projection, and tokens r*S/W ... (r+1)*S/W - 1 of the residual stream. Each rank's
product is a partial sum of the projection; the reduce-scatter along the sequence leaves rank r the complete sum of
its tokens, to which the bias and the residual are added (dropout is off).
"""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn, shared_generator


def solution(ctx: torch.Tensor, w_proj: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
    partial = ctx @ w_proj  # (S, B, H), sequence-first
    out = torch.empty_like(residual)
    dist.reduce_scatter_tensor(out, partial.contiguous())
    return (out.float() + bias.float() + residual.float()).to(residual.dtype)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, S: int, B: int, H: int):
    dt = dtype_of(dtype)
    bias = randn((H,), dt, device, shared_generator(seed, device), scale=0.5)
    g = rank_generator(seed, rank, device)
    h = H // world_size
    ctx = randn((S, B, h), dt, device, g)
    w_proj = randn((h, H), dt, device, g, scale=H ** -0.5)
    residual = randn((S // world_size, B, H), dt, device, g)
    return (ctx, w_proj, bias, residual)


def oracle(inputs: list[tuple], S: int, B: int, H: int, **_):
    dt = inputs[0][0].dtype
    acc = accumulate_dtype(dt)
    ctx = torch.cat([inp[0] for inp in inputs], dim=2).to(acc)
    weight = torch.cat([inp[1] for inp in inputs], dim=0).to(acc)
    residual = torch.cat([inp[3] for inp in inputs], dim=0).to(acc)
    out = (torch.einsum("sbk,kh->sbh", ctx, weight) + inputs[0][2].to(acc) + residual).to(dt)
    return [block.clone() for block in out.chunk(len(inputs), dim=0)]
