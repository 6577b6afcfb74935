"""Class: work done while the host waits for a thread to leave. Each call starts a thread and returns without joining
it; the thread burns about 100 ms of CPU, then ends. The host, finding a thread of the solution's after the call,
waits for it to leave and, when it does not, continues the ranks for a moment so that a joined thread can finish its
exit: this one works then, off every clock. The host counts a leaving thread's CPU and refuses one that worked."""

import threading
import time

import torch
import torch.distributed as dist


def _burn() -> None:
    end = time.thread_time() + 0.1
    while time.thread_time() < end:
        pass


def solution(x: torch.Tensor) -> torch.Tensor:
    threading.Thread(target=_burn).start()
    out = x.clone()
    dist.all_reduce(out)
    return out
