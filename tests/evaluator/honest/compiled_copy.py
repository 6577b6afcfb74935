"""Uses torch.compile for its local work (importing torch._dynamo, which wraps torch.manual_seed as it loads:
PyTorch changing itself, which the integrity check must not mistake for tampering), then reduces with NCCL."""

import torch
import torch.distributed as dist


@torch.compile(backend="eager", dynamic=False)
def _prepare(x: torch.Tensor) -> torch.Tensor:
    return x * 1.0


def solution(x: torch.Tensor) -> torch.Tensor:
    out = _prepare(x).clone()
    dist.all_reduce(out)
    return out
