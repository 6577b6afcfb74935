"""Allocates its workspace lazily — on the first call of each size, grown when a larger input arrives, reused
below that — and returns a fresh tensor every call."""

import torch
import torch.distributed as dist

_workspace = None


def solution(x: torch.Tensor) -> torch.Tensor:
    global _workspace
    n = x.numel()
    if _workspace is None or _workspace.numel() < n or _workspace.dtype != x.dtype:
        _workspace = torch.empty(max(n, 1024), dtype=x.dtype, device=x.device)
    work = _workspace[:n]
    work.copy_(x.reshape(-1))
    dist.all_reduce(work)
    return work.view(x.shape).clone()
