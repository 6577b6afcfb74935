"""All-reduces only the sum of squares and centres each slice on its own mean instead of the row's mean."""

import torch
import torch.distributed as dist

EPS = 1e-5


def solution(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    hidden = x.shape[-1] * dist.get_world_size()
    xf = x.float()
    mean = xf.mean(dim=-1, keepdim=True)
    sum_sq = xf.square().sum(dim=-1, keepdim=True)
    dist.all_reduce(sum_sq)
    var = sum_sq / hidden - mean.square()
    return ((xf - mean) * torch.rsqrt(var + EPS) * weight.float() + bias.float()).to(x.dtype)
