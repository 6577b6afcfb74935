"""A correct all-reduce that, in its warm-up call, writes the engine's "timed" reply for every timed iteration to
come on the rank's report descriptor (its argv[3]), well formed. Believed, each window ended at a reply read before
its command was sent: on CPU profiles, where the figure is the host's window, the solution read thousands of times
faster than the baseline. ARENA_TEST_AHEAD says what else it writes: "junk" adds reports of a kind no rank writes
(once, their sheer number slowed the host's loop so the real outputs were in place by the stop), "twice" writes the
warm-up call's own reply a second time."""

import json
import os
import sys

import torch
import torch.distributed as dist

_AHEAD = "ARENA_TEST_AHEAD"
_calls = [0]


def _line(report: dict) -> bytes:
    return (json.dumps(report) + "\n").encode()


def solution(x: torch.Tensor) -> torch.Tensor:
    _calls[0] += 1
    if _calls[0] == 1:  # the warm-up call
        rank, fd = int(sys.argv[1]), int(sys.argv[3])
        if _AHEAD == "twice":
            os.write(fd, _line({"kind": "called", "rank": rank, "name": "warm", "phase": "setup", "nbytes": 64}))
        else:
            for i in range(60):
                os.write(fd, _line({"kind": "timed", "rank": rank, "i": i, "launch_us": 1.0, "nbytes": 64}))
        if _AHEAD == "junk":
            for _ in range(2000):
                os.write(fd, _line({"kind": "note", "rank": rank}))
    out = torch.empty_like(x)
    out.copy_(x)
    dist.all_reduce(out)
    return out
