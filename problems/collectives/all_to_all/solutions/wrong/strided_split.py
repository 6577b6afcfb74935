"""Splits the rows round-robin (row i to rank i % W) instead of into contiguous blocks."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    m, c = x.shape
    send = x.reshape(m // world, world, c).transpose(0, 1).contiguous()
    out = torch.empty_like(send)
    dist.all_to_all_single(out, send)
    return out.reshape(m, c)
