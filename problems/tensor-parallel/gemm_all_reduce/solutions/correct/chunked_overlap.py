"""Splits the rows into chunks and starts each chunk's all-reduce while the next chunk's matmul runs."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    m = x.shape[0]
    out = torch.empty((m, w.shape[0]), dtype=x.dtype, device=x.device)
    step = -(-m // 4)
    works = []
    for lo in range(0, m, step):
        hi = min(lo + step, m)
        torch.matmul(x[lo:hi], w.T, out=out[lo:hi])
        works.append(dist.all_reduce(out[lo:hi], async_op=True))
    for work in works:
        work.wait()
    return out
