"""Writes a file outside its working directory (it could as well overwrite a cache or another job's files),
swallowing the error if there is one, and then computes honestly."""

import torch
import torch.distributed as dist

try:
    with open("/tmp/arena-cheat-outside.txt", "w") as f:
        f.write("was here\n")
except OSError:
    pass


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    return out
