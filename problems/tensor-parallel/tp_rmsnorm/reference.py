"""RMSNorm over a hidden dim split across ranks (vLLM's MiniMaxText01RMSNormTP).

Rank r holds hidden features r*H/W ... (r+1)*H/W - 1 of every row and the same slice of the norm weight. The root
mean square runs over the full H features, so each rank's per-row sum of squares is all-reduced first.
"""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn, shared_generator

EPS = 1e-6


def solution(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    sum_sq = xf.square().sum(dim=-1, keepdim=True)
    dist.all_reduce(sum_sq, op=dist.ReduceOp.SUM)
    hidden = x.shape[-1] * dist.get_world_size()
    return (xf * torch.rsqrt(sum_sq / hidden + EPS) * weight.float()).to(x.dtype)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, T: int, H: int):
    dt = dtype_of(dtype)
    # Each row's scale is shared by all its slices (drawn from the shared stream), and varies between rows, so a norm
    # taken over one slice only is far off.
    row_scale = randn((T, 1), torch.float32, device, shared_generator(seed, device), scale=0.5).exp()
    g = rank_generator(seed, rank, device)
    x = (randn((T, H // world_size), torch.float32, device, g) * row_scale).to(dt)
    weight = (1.0 + randn((H // world_size,), torch.float32, device, g, scale=0.1)).to(dt)
    return (x, weight)


def oracle(inputs: list[tuple], T: int, H: int, **_):
    x0 = inputs[0][0]
    acc = accumulate_dtype(x0.dtype)
    x = torch.cat([inp[0] for inp in inputs], dim=1).to(acc)
    weight = torch.cat([inp[1] for inp in inputs]).to(acc)
    y = (x * torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + EPS) * weight).to(x0.dtype)
    return [block.clone() for block in y.chunk(len(inputs), dim=1)]
