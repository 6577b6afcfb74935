"""Keeps one workspace buffer per shape across calls (allocated on the first call, as a real kernel keeps its
scratch space) — but never a result: every call copies its input in, reduces, and returns a fresh copy."""

import torch
import torch.distributed as dist

_workspaces: dict = {}


def solution(x: torch.Tensor) -> torch.Tensor:
    key = (x.shape, x.dtype, x.device)
    work = _workspaces.get(key)
    if work is None:
        work = _workspaces[key] = torch.empty_like(x)
    work.copy_(x)
    dist.all_reduce(work)
    return work.clone()
