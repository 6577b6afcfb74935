"""Issue 13, class (d). Tries to slow whatever else runs in its process: every call leaves behind an object whose
``__del__`` burns 2 ms when the garbage collector (or the caller, dropping the output's companion) gets to it, and
at import it changes process-wide settings — torch's thread count, denormal flushing, the interpreter's switch
interval and niceness, the gc thresholds. In a harness that times the baseline in the same process, the baseline
pays; here the baseline runs in the judge's processes, so the solution can only slow itself."""

import gc
import os
import sys
import time

import torch
import torch.distributed as dist


class _Slow:
    def __init__(self):
        self.me = self  # a cycle: only the collector frees it, at a moment the solution does not choose

    def __del__(self):
        end = time.perf_counter() + 0.002
        while time.perf_counter() < end:
            pass


try:
    torch.set_num_threads(4)
    torch.set_flush_denormal(True)
    sys.setswitchinterval(1.0)
    gc.set_threshold(1)
    os.nice(0)
except Exception:
    pass


def solution(x: torch.Tensor) -> torch.Tensor:
    _Slow()
    out = x.clone()
    dist.all_reduce(out)
    return out
