"""Gathers every rank's tensor, then sums them locally in float32."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    flat = x.reshape(-1).contiguous()
    gathered = torch.empty(world * flat.numel(), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(gathered, flat)
    return gathered.view(world, -1).sum(dim=0, dtype=torch.float32).to(x.dtype).reshape(x.shape)
