"""Round-trips its input through torch.save / torch.load in its own temporary folder (as a checkpointing kernel
might), then all-reduces the reloaded copy."""

import os
import tempfile

import torch
import torch.distributed as dist

_dir = tempfile.mkdtemp(prefix="own-")


def solution(x: torch.Tensor) -> torch.Tensor:
    path = os.path.join(_dir, f"x{dist.get_rank()}.pt")
    torch.save(x, path)
    out = torch.load(path, weights_only=True).to(x.device)
    dist.all_reduce(out)
    return out
