"""Slows the baseline instead of speeding itself up: replaces torch.distributed.all_reduce, which the reference
calls, with a version that waits first, and keeps the real one for itself."""

import importlib
import time

import torch

_dist = importlib.import_module("torch.distributed")
_real_all_reduce = _dist.all_reduce


def _slow_all_reduce(*args, **kwargs):
    time.sleep(0.002)
    return _real_all_reduce(*args, **kwargs)


_dist.all_reduce = _slow_all_reduce


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    _real_all_reduce(out)
    return out
