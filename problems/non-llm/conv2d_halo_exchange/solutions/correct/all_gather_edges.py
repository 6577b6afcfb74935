"""All-gathers every rank's first and last rows and picks the neighbours' rows out of them."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(x, weight, bias):
    rank, world = dist.get_rank(), dist.get_world_size()
    edges = torch.stack([x[:, :, 0], x[:, :, -1]]).contiguous()  # [2, batch, channels, width]
    every = torch.empty((world * 2, *edges.shape[1:]), dtype=x.dtype, device=x.device)
    dist.all_gather_into_tensor(every, edges)
    every = every.view(world, 2, *edges.shape[1:])
    zero = torch.zeros_like(edges[0])
    above = every[rank - 1, 1] if rank > 0 else zero
    below = every[rank + 1, 0] if rank < world - 1 else zero
    padded = torch.cat([above.unsqueeze(2), x, below.unsqueeze(2)], dim=2)
    return F.conv2d(F.pad(padded, (1, 1, 0, 0)), weight, bias)
