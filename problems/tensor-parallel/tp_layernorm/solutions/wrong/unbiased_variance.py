"""Uses the unbiased variance (divides the centred sum of squares by H - 1 instead of H)."""

import torch
import torch.distributed as dist

EPS = 1e-5


def solution(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    hidden = x.shape[-1] * dist.get_world_size()
    xf = x.float()
    stats = torch.stack([xf.sum(dim=-1), xf.square().sum(dim=-1)], dim=-1)
    dist.all_reduce(stats)
    mean = stats[:, :1] / hidden
    var = (stats[:, 1:] - hidden * mean.square()) / (hidden - 1)
    return ((xf - mean) * torch.rsqrt(var + EPS) * weight.float() + bias.float()).to(x.dtype)
