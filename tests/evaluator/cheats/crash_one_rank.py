"""Rank 1 dies of a segmentation fault on its second call, without a Python traceback."""

import os
import signal

import torch
import torch.distributed as dist

_calls = 0


def solution(x: torch.Tensor) -> torch.Tensor:
    global _calls
    _calls += 1
    if _calls == 2 and dist.get_rank() == 1:
        os.kill(os.getpid(), signal.SIGSEGV)
    out = x.clone()
    dist.all_reduce(out)
    return out
