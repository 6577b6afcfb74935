"""Returns a non-contiguous output: a strided view (every other element) of a larger buffer, holding the sum."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    reduced = x.clone()
    dist.all_reduce(reduced)
    buffer = torch.empty(2 * x.numel(), dtype=x.dtype, device=x.device)
    out = buffer[::2].view(x.shape)
    out.copy_(reduced)
    assert not out.is_contiguous()
    return out
