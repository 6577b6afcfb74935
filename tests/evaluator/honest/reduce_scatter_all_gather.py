"""Reduce-scatter then all-gather (what a ring all-reduce is), with the buffer padded to a multiple of the world
size."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    n = x.numel()
    chunk = -(-n // world)
    padded = torch.zeros(chunk * world, dtype=x.dtype, device=x.device)
    padded[:n].copy_(x.reshape(-1))
    mine = torch.empty(chunk, dtype=x.dtype, device=x.device)
    dist.reduce_scatter_tensor(mine, padded)
    gathered = torch.empty(chunk * world, dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(gathered, mine)
    return gathered[:n].reshape(x.shape).clone()
