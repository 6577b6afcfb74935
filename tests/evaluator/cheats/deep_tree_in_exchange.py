"""An honest all-reduce that, on its first call, leaves a folder tree 5,000 levels deep in its rank's exchange folder
(each level made relative to the one before, so no path is ever too long). Removing it by recursion failed: the
evaluation ended as the evaluator's failure instead of its verdict, and its folder stayed on the host."""

import os

import torch
import torch.distributed as dist

_done = [False]


def solution(x: torch.Tensor) -> torch.Tensor:
    if not _done[0]:
        _done[0] = True
        here = os.getcwd()
        os.chdir(f"/io/r{dist.get_rank()}")
        for _ in range(5000):
            os.mkdir("d")
            os.chdir("d")
        os.chdir(here)
    out = torch.empty_like(x)
    out.copy_(x)
    dist.all_reduce(out)
    return out
