"""Clips with the norm of this rank's own gradients, taken before the all-reduce: the coefficient differs per rank."""

import torch
import torch.distributed as dist


def solution(max_norm, *grads):
    w = dist.get_world_size()
    norm = torch.stack([torch.linalg.vector_norm(g.float()) ** 2 for g in grads]).sum().sqrt()
    coef = (max_norm / (norm + 1e-6)).clamp(max=1.0)
    out = []
    for g in grads:
        buf = g.to(torch.float32, copy=True)
        dist.all_reduce(buf)
        out.append((buf / w * coef).to(g.dtype))
    return (*out, torch.stack([norm, coef]))
