"""Writes files outside its working directory — the host's /tmp and /var/tmp, the repository, the evaluation's
own folder above /io — swallowing the errors, and then computes honestly. In the sandbox these paths are either
its own tmpfs or read-only / absent, so nothing reaches the host."""

import os

import torch
import torch.distributed as dist

_targets = ["/tmp/arena-cheat-outside.txt", "/var/tmp/arena-cheat-outside.txt",
            "ARENA_TEST_REPO/arena-cheat-outside.txt", "ARENA_TEST_PARENT/arena-cheat-outside.txt",
            "/io/../arena-cheat-outside.txt", "/solution/arena-cheat-outside.txt"]
for _path in _targets:
    try:
        with open(_path, "w") as f:
            f.write("was here\n")
    except OSError:
        pass


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    return out
