"""Normalizes each rank's partial before the reduce-scatter: the norm of a sum is not the sum of norms."""

import torch
import torch.distributed as dist


def solution(partial, weight):
    xf = partial.float()
    normed = (xf * torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + 1e-6) * weight.float()).to(partial.dtype)
    block = torch.empty(
        (partial.shape[0] // dist.get_world_size(), partial.shape[1]), dtype=partial.dtype, device=partial.device
    )
    dist.reduce_scatter_tensor(block, normed)
    return block
