"""Uses torch.compile with its default backend (Inductor: generated code built in subprocesses, with caches under
the solution's own temp directory) for the local work, then reduces with NCCL. Inductor's compile path must pass
the sandbox."""

import torch
import torch.distributed as dist


@torch.compile(dynamic=False)
def _scaled(x: torch.Tensor) -> torch.Tensor:
    return x * 1.0


def solution(x: torch.Tensor) -> torch.Tensor:
    out = _scaled(x)
    dist.all_reduce(out)
    return out
