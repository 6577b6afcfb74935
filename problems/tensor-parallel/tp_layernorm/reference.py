"""LayerNorm over a hidden dim split across ranks (ColossalAI's 2-D tensor-parallel LayerNorm, on a 1-D group).

Rank r holds hidden features r*H/W ... (r+1)*H/W - 1 of every row and the same slices of the weight and bias. The
mean and variance run over the full H features, so each rank's per-row sum and sum of squares are all-reduced.
"""

import torch
import torch.distributed as dist

from problems.common import accumulate_dtype, dtype_of, rank_generator, randn, shared_generator

EPS = 1e-5


def solution(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    stats = torch.stack([xf.sum(dim=-1), xf.square().sum(dim=-1)], dim=-1)
    dist.all_reduce(stats, op=dist.ReduceOp.SUM)
    stats /= x.shape[-1] * dist.get_world_size()
    mean = stats[:, :1]
    var = stats[:, 1:] - mean.square()
    return ((xf - mean) * torch.rsqrt(var + EPS) * weight.float() + bias.float()).to(x.dtype)


def make_inputs(rank: int, world_size: int, seed: int, device: torch.device, dtype: str, T: int, H: int):
    dt = dtype_of(dtype)
    # Each row has its own offset and scale, shared by all its slices, so statistics of one slice are far off.
    shared = shared_generator(seed, device)
    row_mean = randn((T, 1), torch.float32, device, shared)
    row_scale = randn((T, 1), torch.float32, device, shared, scale=0.5).exp()
    g = rank_generator(seed, rank, device)
    x = (randn((T, H // world_size), torch.float32, device, g) * row_scale + row_mean).to(dt)
    weight = (1.0 + randn((H // world_size,), torch.float32, device, g, scale=0.1)).to(dt)
    bias = randn((H // world_size,), dt, device, g, scale=0.1)
    return (x, weight, bias)


def oracle(inputs: list[tuple], T: int, H: int, **_):
    x0 = inputs[0][0]
    acc = accumulate_dtype(x0.dtype)
    x = torch.cat([inp[0] for inp in inputs], dim=1).to(acc)
    weight = torch.cat([inp[1] for inp in inputs]).to(acc)
    bias = torch.cat([inp[2] for inp in inputs]).to(acc)
    mean = x.mean(dim=-1, keepdim=True)
    var = (x - mean).square().mean(dim=-1, keepdim=True)
    y = ((x - mean) * torch.rsqrt(var + EPS) * weight + bias).to(x0.dtype)
    return [block.clone() for block in y.chunk(len(inputs), dim=1)]
