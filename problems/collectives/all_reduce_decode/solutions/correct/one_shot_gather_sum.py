"""One-shot: every rank gathers every rank's buffer and sums them itself in float32, in rank order."""

import torch
import torch.distributed as dist


def solution(x):
    w = dist.get_world_size()
    every = torch.empty((w, *x.shape), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(every.view(-1, x.shape[-1]), x.contiguous())
    return every.float().sum(dim=0).to(x.dtype)
