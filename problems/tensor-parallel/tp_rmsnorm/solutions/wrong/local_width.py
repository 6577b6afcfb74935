"""All-reduces the sums of squares but divides by this rank's slice width instead of the full hidden size."""

import torch
import torch.distributed as dist

EPS = 1e-6


def solution(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    xf = x.float()
    sum_sq = xf.square().sum(dim=-1, keepdim=True)
    dist.all_reduce(sum_sq)
    return (xf * torch.rsqrt(sum_sq / x.shape[-1] + EPS) * weight.float()).to(x.dtype)
