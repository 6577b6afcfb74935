"""Plain PyTorch, no compiler: splits the tensor into four chunks and reduces them as overlapping asynchronous
all-reduces, waiting on all of them before returning."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    flat = out.view(-1)
    works = [dist.all_reduce(chunk, async_op=True) for chunk in flat.chunk(4)]
    for work in works:
        work.wait()
    return out
