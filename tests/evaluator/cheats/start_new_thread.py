"""Issue 13, class (d). Starts a raw thread with ``_thread.start_new_thread`` at import (no threading.Thread object
exists for it, so nothing in threading.enumerate() shows it) that keeps a core busy."""

import importlib
import time

import torch
import torch.distributed as dist

_thread = importlib.import_module("_" + "thread")


def _burn() -> None:
    while True:
        end = time.monotonic() + 0.01
        while time.monotonic() < end:
            pass
        time.sleep(0.001)


getattr(_thread, "start_new_" + "thread")(_burn, ())


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    return out
