"""All-gathers every rank's per-row sum of squares and adds them up locally in rank order."""

import torch
import torch.distributed as dist

EPS = 1e-6


def solution(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    xf = x.float()
    local = xf.square().sum(dim=-1)
    parts = torch.empty((world * local.shape[0],), dtype=local.dtype, device=local.device)
    dist.all_gather_into_tensor(parts, local)
    mean_sq = parts.view(world, -1).sum(dim=0, keepdim=True).T / (x.shape[-1] * world)
    return (xf * torch.rsqrt(mean_sq + EPS) * weight.float()).to(x.dtype)
