"""Reinterprets the (N, K/W) weight as (K/W, N) with view() instead of transposing it."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    out = x @ w.view(w.shape[1], w.shape[0])
    dist.all_reduce(out)
    return out
