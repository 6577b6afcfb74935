"""Gathers the weight and bias blocks instead of the outputs, then does the whole product locally.

Moves H*N instead of B*N elements and does W times the FLOPs: correct, and only sensible when B is large.
"""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    world = dist.get_world_size()
    ws = [torch.empty_like(w) for _ in range(world)]
    bs = [torch.empty_like(b) for _ in range(world)]
    dist.all_gather(ws, w.contiguous())
    dist.all_gather(bs, b.contiguous())
    return torch.addmm(torch.cat(bs), x, torch.cat(ws, dim=1))
