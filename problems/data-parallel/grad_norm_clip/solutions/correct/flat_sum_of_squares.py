"""Flattens every shard into one float32 buffer, all-gathers the per-rank sums of squares, and skips the
multiply when no clipping is needed."""
import torch
import torch.distributed as dist


def solution(max_norm, *grads):
    world = dist.get_world_size()
    flat = torch.cat([g.reshape(-1).float() for g in grads])
    mine = torch.dot(flat, flat).reshape(1)
    every = torch.empty(world, dtype=torch.float32, device=flat.device)
    dist.all_gather_into_tensor(every, mine)
    total_norm = every.sum().sqrt()
    coef = torch.minimum(max_norm / (total_norm + 1e-6), torch.ones_like(total_norm))
    if bool(coef < 1):
        out = tuple((g.float() * coef).to(g.dtype) for g in grads)
    else:
        out = tuple(g.clone() for g in grads)
    return (*out, torch.stack([total_norm, coef]))
