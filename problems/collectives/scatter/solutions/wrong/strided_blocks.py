"""Deals rank 0's rows out round-robin (row i to rank i % W) instead of in contiguous blocks."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    rank, world = dist.get_rank(), dist.get_world_size()
    out = torch.empty((x.shape[0] // world, x.shape[1]), dtype=x.dtype, device=x.device)
    blocks = [x[i::world].contiguous() for i in range(world)] if rank == 0 else None
    dist.scatter(out, blocks, src=0)
    return out
