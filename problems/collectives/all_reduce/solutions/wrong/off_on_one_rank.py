import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    if dist.get_rank() == dist.get_world_size() - 1:
        out[0] += 1.0
    return out
