"""Adds the bias to every rank's partial product before the all-reduce, so it is counted W times."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = torch.addmm(b, x, w)
    dist.all_reduce(out)
    return out
