"""Rank 0 collects every other rank's tensor and sums them, but leaves out its own."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    rank, world = dist.get_rank(), dist.get_world_size()
    if rank == 0:
        bufs = [torch.empty_like(x, memory_format=torch.contiguous_format) for _ in range(world)]
        dist.gather(x.contiguous(), bufs, dst=0)
        return torch.stack(bufs[1:]).sum(dim=0)
    dist.gather(x.contiguous(), None, dst=0)
    return x.new_empty((0, x.shape[1]))
