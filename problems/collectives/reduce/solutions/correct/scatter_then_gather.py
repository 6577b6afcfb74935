"""Reduce as reduce-scatter then gather: every rank sums one block, and rank 0 collects the blocks."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    rank, world = dist.get_rank(), dist.get_world_size()
    flat = x.contiguous().reshape(-1)
    block = torch.empty(flat.numel() // world, dtype=x.dtype, device=x.device)
    dist.reduce_scatter_tensor(block, flat)
    if rank == 0:
        out = torch.empty_like(flat)
        dist.gather(block, list(out.chunk(world)), dst=0)
        return out.reshape(x.shape)
    dist.gather(block, None, dst=0)
    return x.new_empty((0, x.shape[1]))
