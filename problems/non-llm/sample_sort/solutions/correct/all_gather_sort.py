"""All-gathers every key, sorts the whole sequence on every rank and keeps this rank's slice."""

import torch
import torch.distributed as dist


def solution(keys):
    rank, world = dist.get_rank(), dist.get_world_size()
    n = keys.numel()
    every = torch.empty(world * n, dtype=keys.dtype, device=keys.device)
    dist.all_gather_into_tensor(every, keys)
    return every.sort().values[rank * n : (rank + 1) * n].clone()
