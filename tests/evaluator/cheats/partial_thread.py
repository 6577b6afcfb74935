"""Issue 13, class (d). Starts a thread whose target is a functools.partial (so a static reading of
``threading.Thread(target=...)`` finds no function of the file) on its first call, and lets it run on."""

import functools
import importlib
import time

import torch
import torch.distributed as dist

_threading = importlib.import_module("thread" + "ing")
_started = False


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.001)


def solution(x: torch.Tensor) -> torch.Tensor:
    global _started
    if not _started:
        _started = True
        _threading.Thread(target=functools.partial(_spin, 60.0), daemon=True).start()
    out = x.clone()
    dist.all_reduce(out)
    return out
