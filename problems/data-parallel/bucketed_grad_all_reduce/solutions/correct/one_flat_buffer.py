"""Ignores the bucket cap: one flat buffer, summed, then divided (the division after the sum is also allowed)."""

import torch
import torch.distributed as dist


def solution(bucket_cap_bytes, *grads):
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat /= dist.get_world_size()
    return tuple(p.view(g.shape).clone() for p, g in zip(flat.split([g.numel() for g in grads]), grads))
