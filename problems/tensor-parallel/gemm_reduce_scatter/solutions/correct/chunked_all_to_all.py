"""Computes the partial product block by block and exchanges the blocks with one all-to-all, then sums locally.

Block j of this rank's partial goes to rank j; each rank sums the W partials of its own block in float32.
"""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    partial = x @ w
    received = torch.empty_like(partial)
    dist.all_to_all_single(received, partial)
    rows = partial.shape[0] // world
    return received.view(world, rows, partial.shape[1]).float().sum(dim=0).to(partial.dtype)
