"""The reference, in a rank that holds 4 GiB of device memory as a judge does (README.md beside)."""

import torch
import torch.distributed as dist

# The reference, in a process holding as much device memory as a judge does (4 GiB, touched once).
_held = torch.ones(1 << 31, dtype=torch.bfloat16, device="cuda")


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out, op=dist.ReduceOp.SUM)
    return out
