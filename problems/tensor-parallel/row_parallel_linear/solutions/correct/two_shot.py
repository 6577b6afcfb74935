"""All-reduce split into reduce-scatter and all-gather, with the bias added on the reduced row block only."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    partial = x @ w
    rows = partial.shape[0] // world
    block = torch.empty((rows, partial.shape[1]), dtype=partial.dtype, device=partial.device)
    dist.reduce_scatter_tensor(block, partial)
    block += b
    out = torch.empty_like(partial)
    dist.all_gather_into_tensor(out, block)
    return out
