"""A wrong solution (rank 1 adds one) that tries to turn its verdict into the platform's failure: on its first call
it shrinks its feed slot to nothing through the descriptor the rank was given, so that the judge, writing the next
inputs through its mapping of the old size, would die of SIGBUS (an infra_error, which is retried, never judged).
The judge writes only to a slot whose size it has just read, while the ranks are stopped."""

import os

import torch
import torch.distributed as dist

_shrunk = False


def solution(x: torch.Tensor) -> torch.Tensor:
    global _shrunk
    if not _shrunk:
        _shrunk = True
        for name in os.listdir("/proc/self/fd"):
            try:
                if "arena-feed" in os.readlink(f"/proc/self/fd/{name}"):
                    os.ftruncate(int(name), 0)
            except OSError:
                pass
    out = x.clone()
    dist.all_reduce(out)
    if dist.get_rank() == 1:
        out += 1.0
    return out
