"""Broadcasts in 5 pipelined row chunks but sizes them with floor division, so the last rows are never sent."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone(memory_format=torch.contiguous_format)
    n_chunks = 5
    rows = out.shape[0] // n_chunks
    works = [dist.broadcast(out[i * rows : (i + 1) * rows], src=0, async_op=True) for i in range(n_chunks)]
    for w in works:
        w.wait()
    return out
