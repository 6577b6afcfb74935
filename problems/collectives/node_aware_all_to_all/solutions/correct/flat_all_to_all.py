"""One flat all-to-all over every rank: correct, only not node-aware."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor, ranks_per_node: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    dist.all_to_all_single(out, x.contiguous())
    return out
