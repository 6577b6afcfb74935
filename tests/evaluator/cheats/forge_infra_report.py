"""Returns wrong outputs, and in its first trial writes a report of its own to the rank's report descriptor (its
argv[3]): an error of category "infra", as the rank sends when its boot fails. Believed, the evaluation would end
as infra_error, the platform's fault, retried elsewhere instead of counted as wrong."""

import json
import os
import sys

import torch

_calls = [0]


def solution(x: torch.Tensor) -> torch.Tensor:
    _calls[0] += 1
    if _calls[0] == 2:  # the warm-up call is the first
        line = {"kind": "error", "rank": int(sys.argv[1]), "phase": "setup", "category": "infra",
                "message": "NCCL could not initialise: the GPU fell off the bus"}
        os.write(int(sys.argv[3]), (json.dumps(line) + "\n").encode())
    return torch.zeros_like(x)
