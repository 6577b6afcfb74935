"""Issue 13, class (d). Starts helper processes on its first call — a multiprocessing child and a subprocess —
that keep running through the trials and the timing (to burn the CPU the baseline would share, or to work off the
clock), then computes honestly."""

import importlib
import sys

import torch
import torch.distributed as dist

_started = False


def _linger() -> None:
    import time

    time.sleep(60)


def solution(x: torch.Tensor) -> torch.Tensor:
    global _started
    if not _started:
        _started = True
        mp = importlib.import_module("multi" + "processing")
        mp.get_context("fork").Process(target=_linger, daemon=True).start()
        sp = importlib.import_module("sub" + "process")
        sp.Popen([sys.executable, "-c", "import time; time.sleep(60)  # arena_helper_marker"],
                 stdout=sp.DEVNULL, stderr=sp.DEVNULL)
    out = x.clone()
    dist.all_reduce(out)
    return out
