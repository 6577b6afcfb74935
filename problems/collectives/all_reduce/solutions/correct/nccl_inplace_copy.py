import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    out.copy_(x)
    dist.all_reduce(out)
    return out
