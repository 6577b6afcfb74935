"""Each rank computes its slice's mean and centred sum of squares; the pieces are all-gathered and merged with
the parallel-variance formula, which avoids the cancellation in E[x^2] - E[x]^2."""

import torch
import torch.distributed as dist

EPS = 1e-5


def solution(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    n = x.shape[-1]
    xf = x.float()
    mean = xf.mean(dim=-1)
    m2 = (xf - mean[:, None]).square().sum(dim=-1)
    local = torch.stack([mean, m2], dim=0)
    parts = torch.empty((world * 2, x.shape[0]), dtype=local.dtype, device=local.device)
    dist.all_gather_into_tensor(parts, local)
    means, m2s = parts.view(world, 2, -1).unbind(dim=1)
    total_mean = means.mean(dim=0)
    total_m2 = m2s.sum(dim=0) + n * (means - total_mean).square().sum(dim=0)
    var = total_m2 / (n * world)
    y = (xf - total_mean[:, None]) * torch.rsqrt(var[:, None] + EPS)
    return (y * weight.float() + bias.float()).to(x.dtype)
