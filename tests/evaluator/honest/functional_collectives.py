"""PyTorch's functional collectives (torch.distributed._functional_collectives): the all-reduce returns a new
tensor that is waited on before the call returns."""

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol


def solution(x: torch.Tensor) -> torch.Tensor:
    out = funcol.all_reduce(x, "sum", dist.group.WORLD)
    return funcol.wait_tensor(out).clone()
