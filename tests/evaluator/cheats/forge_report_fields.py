"""An honest all-reduce that, in its first trial, also writes a well-formed JSON line of its own to the rank's report
descriptor (its argv[3]) with one field the host reads changed (ARENA_TEST_FORGED names which): a call count that is
text, a report in another rank's name, the host's own bookkeeping field that stops the calls being counted,
or a second boot report whose environment would have become the result's.
Believed, the host failed on it (the evaluation ended as infra_error, retried on another host as the platform's
fault) or counted what the solution chose."""

import json
import os
import sys

import torch
import torch.distributed as dist

_FORGED = "ARENA_TEST_FORGED"
_calls = [0]


def _forged_line() -> bytes:
    rank = int(sys.argv[1])
    report = {"kind": "called", "rank": rank, "name": "t0", "phase": "correctness", "devices": [], "aliases": [],
              "subclasses": [], "multicast_changed": [], "py_threads": {}, "calls": {}}
    if _FORGED == "calls":
        report["calls"] = {"torch.distributed.all_reduce": "many"}
    elif _FORGED == "rank":
        report["rank"] = rank + 1
    elif _FORGED == "host_field":
        report["_counted"] = True
    elif _FORGED == "booted":  # a second boot report, claiming the figures came from another machine
        report = {"kind": "booted", "rank": rank, "pid": os.getpid(), "boot_steps": {},
                  "environment": {"torch": "9.9.9+forged", "hostname": "h200-node-07", "gpu_count": 8}}
    return (json.dumps(report) + "\n").encode()


def solution(x: torch.Tensor) -> torch.Tensor:
    _calls[0] += 1
    if _calls[0] == 2:  # the warm-up call is the first
        os.write(int(sys.argv[3]), _forged_line())
    out = torch.empty_like(x)
    out.copy_(x)
    dist.all_reduce(out)
    return out
