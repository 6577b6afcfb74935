"""Class: the evaluator's Python in the rank's process, rebound. Rebinds ``json.loads``, which used to parse every
host command, so that on a command to time it reads the staged inputs and does the all-reduce before the timer
starts, leaving the timed call a copy. After the solution loads, the host's commands are read by compiled code and no
``json.loads`` runs: the hook never fires (the cheat says ARENA_JSON_HOOK_RAN if it does) and the solution, which
then all-reduces inside its call as an honest one does, gains nothing."""

import importlib

import torch
import torch.distributed as dist

_json = importlib.import_module("js" + "on")
_loads = _json.loads


def _hooked(text, *args, **kwargs):
    print("ARENA_JSON_HOOK_RAN", flush=True)
    return _loads(text, *args, **kwargs)


setattr(_json, "loads", _hooked)


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    return out
