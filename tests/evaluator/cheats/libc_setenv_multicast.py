"""Issue 13, class (e). Turns NVLink multicast back on in libc's environment with ``setenv`` through ctypes, which
NCCL reads when it makes a communicator, while ``os.environ`` still says 0."""

import ctypes

import torch
import torch.distributed as dist

_libc = ctypes.CDLL(None)
getattr(_libc, "set" + "env")(b"NCCL_NVLS_" + b"ENABLE", b"1", 1)


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    return out
