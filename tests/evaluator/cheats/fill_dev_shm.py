"""An honest all-reduce that looks, on its first call, at how much its sandbox's /dev/shm would take: a tmpfs with no
size of its own takes half the host's memory, and pages there belong to no process, so a solution could fill the
host's memory until the evaluation ends. It reports what it found in its log."""

import os

import torch
import torch.distributed as dist

_done = [False]
_CAP = 8 << 30  # the largest sandbox /tmp of any profile


def solution(x: torch.Tensor) -> torch.Tensor:
    if not _done[0]:
        _done[0] = True
        st = os.statvfs("/dev/shm")
        size = st.f_blocks * st.f_frsize
        print("ARENA_SHM_CAPPED" if size <= _CAP else f"ARENA_SHM_UNCAPPED {size >> 20} MiB", flush=True)
    out = torch.empty_like(x)
    out.copy_(x)
    dist.all_reduce(out)
    return out
