"""Gathers the output blocks along dim 0 and reshapes straight to (B, N), skipping the transpose."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    local = torch.addmm(b, x, w)
    rows = torch.empty((world * local.shape[0], local.shape[1]), dtype=local.dtype, device=local.device)
    dist.all_gather_into_tensor(rows, local)
    return rows.reshape(local.shape[0], world * local.shape[1])
