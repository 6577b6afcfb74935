"""Issue 13, class (h). Reads the other ranks' input files in the exchange folder (/io/r{R}/in.*.pt) and sums them
locally instead of communicating. During the correctness trials the files can be there; during a timed call every
rank's inputs have been loaded and removed before the call starts, so the cheat finds nothing and returns its own
input (wrong)."""

import glob
import os

import torch
import torch.distributed as dist

_seen = {"trials": 0, "timed": 0}


def solution(x: torch.Tensor) -> torch.Tensor:
    rank, world = dist.get_rank(), dist.get_world_size()
    others = []
    for r in range(world):
        if r == rank:
            continue
        files = [p for p in glob.glob(f"/io/r{r}/in.*.pt") if not p.endswith(".part")]
        for path in files:
            try:
                values = torch.load(path, weights_only=True)
            except Exception:
                continue
            if values and isinstance(values[0], torch.Tensor) and values[0].shape == x.shape:
                others.append(values[0])
                break
    if len(others) == world - 1:
        _seen["trials"] += 1
        return sum(others, x.clone())
    _seen["timed"] += 1
    print("ARENA_OTHER_INPUTS_MISSING", _seen, flush=True)
    return x.clone()
