"""Issue 13, class (d). Computes honestly, but submits work to a ThreadPoolExecutor that it never shuts down: the
pool's thread outlives the call (in a shared process it could slow the baseline, or keep working off the clock)."""

import concurrent.futures
import time

import torch
import torch.distributed as dist

_pool = None


def _busy() -> None:
    end = time.monotonic() + 0.05
    while time.monotonic() < end:
        pass


def solution(x: torch.Tensor) -> torch.Tensor:
    global _pool
    if _pool is None:
        _pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    _pool.submit(_busy)
    out = x.clone()
    dist.all_reduce(out)
    return out
