"""Makes a process group of its own (dist.new_group over every rank) on its first call and all-reduces on it."""

import torch
import torch.distributed as dist

_group = None


def solution(x: torch.Tensor) -> torch.Tensor:
    global _group
    if _group is None:
        _group = dist.new_group(ranks=list(range(dist.get_world_size())))
    out = x.clone()
    dist.all_reduce(out, group=_group)
    return out
