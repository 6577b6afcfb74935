"""The bench all-reduce's reference, its output written into a buffer kept from call to call at a 2 MiB-aligned
offset (benchmarks/variants/all_reduce/README.md)."""

import torch
import torch.distributed as dist

_buf = {}


def solution(x: torch.Tensor) -> torch.Tensor:
    # The reference's work on an output kept from call to call, at a 2 MiB-aligned offset of a larger buffer.
    key = (x.numel(), x.dtype)
    if key not in _buf:
        _buf[key] = torch.empty(x.numel() + (1 << 21), dtype=x.dtype, device=x.device)
    out = _buf[key][: x.numel()]
    out.copy_(x)
    dist.all_reduce(out, op=dist.ReduceOp.SUM)
    return out.clone()
