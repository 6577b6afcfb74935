"""Process rule: a helper forked twice at import. It keeps the spawner's command line and program (a rank is forked
from the spawner, never run anew), and once its parent exits it is adopted by bubblewrap's first process, the
spawner's own parent: by its look alone it was the spawner, and it lived through every phase unseen. The host now
knows the spawner by the pid it found before the solution loaded."""

import importlib
import time

import torch
import torch.distributed as dist

_os = importlib.import_module("o" + "s")  # past the static check, which is a first filter only
_fork = getattr(_os, "fo" + "rk")
child = _fork()
if child == 0:
    if _fork() == 0:
        while True:  # the helper (arena_orphan_marker): alive, doing work of its own, until the sandbox ends
            time.sleep(0.01)
    _os._exit(0)
_os.waitpid(child, 0)


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    return out
