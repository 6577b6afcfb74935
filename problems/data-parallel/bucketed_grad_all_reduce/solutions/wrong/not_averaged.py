"""Wrong: sums the gradients but forgets DDP's division by the world size."""

import torch
import torch.distributed as dist


def solution(bucket_cap_bytes, *grads):
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    return tuple(p.view(g.shape).clone() for p, g in zip(flat.split([g.numel() for g in grads]), grads))
