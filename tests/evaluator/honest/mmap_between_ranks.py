"""Shares data between ranks through a memory-mapped file in /tmp (one sandbox holds every rank of the evaluation,
so they share it): each rank writes its slot, a barrier, every rank sums the slots in rank order, a barrier."""

import torch
import torch.distributed as dist

_maps: dict = {}


def solution(x: torch.Tensor) -> torch.Tensor:
    rank, world = dist.get_rank(), dist.get_world_size()
    key = (x.numel(), x.dtype)
    if key not in _maps:
        path = f"/tmp/arena-honest-mmap-{x.numel()}-{str(x.dtype).split('.')[-1]}.bin"
        if rank == 0:
            open(path, "wb").close()
        dist.barrier()
        _maps[key] = torch.from_file(path, shared=True, size=world * x.numel(), dtype=x.dtype).view(world, -1)
    slots = _maps[key]
    slots[rank].copy_(x.reshape(-1).cpu())
    dist.barrier()
    out = torch.zeros(x.numel(), dtype=x.dtype)
    for r in range(world):
        out += slots[r]
    dist.barrier()
    return out.reshape(x.shape).to(x.device)
