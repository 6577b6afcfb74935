"""Gathers along dim 0 and reshapes to (B, W*C) without moving the rank dim: rows of different tokens get mixed."""

import torch
import torch.distributed as dist


def solution(x):
    w = dist.get_world_size()
    stacked = torch.empty((w * x.shape[0], x.shape[1]), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(stacked, x.contiguous())
    return stacked.view(x.shape[0], w * x.shape[1])
