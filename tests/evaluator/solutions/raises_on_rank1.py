import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    if dist.get_rank() == 1:
        raise RuntimeError("deliberate failure on rank 1")
    out = x.clone()
    dist.all_reduce(out)
    return out
