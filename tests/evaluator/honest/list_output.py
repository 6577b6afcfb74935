"""data-parallel/grad_norm_clip with its several outputs returned as a list (not a tuple): the averaged, clipped
gradients and the [total norm, clip coefficient] pair."""

import torch
import torch.distributed as dist


def solution(max_norm, *grads):
    w = dist.get_world_size()
    averaged = []
    for g in grads:
        buf = g.to(torch.float32, copy=True)
        dist.all_reduce(buf)
        averaged.append(buf / w)
    total_norm = torch.stack([torch.linalg.vector_norm(a) ** 2 for a in averaged]).sum().sqrt()
    coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
    return [(a * coef).to(g.dtype) for a, g in zip(averaged, grads)] + [torch.stack([total_norm, coef])]
