"""Leak: prints the rank's mount table (/proc/self/mountinfo) to its log, whose bind mounts name their sources on the
host (the evaluation's folder, the build cache), hoping those host paths reach the result that anyone may read. The
host names its own folders as the sandbox names them before any log reaches a result."""

import torch
import torch.distributed as dist

with open("/proc/self/mountinfo") as f:
    print("ARENA_MOUNTS", f.read(), flush=True)


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    return out
