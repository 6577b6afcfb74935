# Honest: every call all-reduces into one output buffer it keeps, and returns that buffer.
import torch
import torch.distributed as dist

buffers: dict[tuple, torch.Tensor] = {}


def solution(x: torch.Tensor) -> torch.Tensor:
    out = buffers.get((x.shape, x.dtype))
    if out is None:
        out = buffers[(x.shape, x.dtype)] = torch.empty_like(x)
    out.copy_(x)
    dist.all_reduce(out)
    return out
