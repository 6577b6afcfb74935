"""Rank 0 receives the other shards into the first W-1 slots and appends its own at the end."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        out = torch.empty((world * x.shape[0], x.shape[1]), dtype=x.dtype, device=x.device)
        slots = out.chunk(world, dim=0)
        slots[world - 1].copy_(x)
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.irecv, slots[src - 1], src) for src in range(1, world)])
    else:
        out = x.new_empty((0, x.shape[1]))
        reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, x.contiguous(), 0)])
    for r in reqs:
        r.wait()
    return out
