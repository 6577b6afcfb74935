"""Everything a static reading can refuse at once: imports the harness, walks frames, patches torch through
sys.modules. It never runs: the static check refuses it before any process starts."""

import sys

import torch
import torch.distributed as dist

from evaluator.correctness import compare  # noqa: F401


def solution(x: torch.Tensor) -> torch.Tensor:
    caller = sys._getframe(1)
    caller.f_locals.get("self")
    sys.modules["torch.distributed"].all_reduce = lambda *a, **k: None
    out = x.clone()
    dist.all_reduce(out)
    return out
