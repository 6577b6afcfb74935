import time

import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    if dist.get_rank() == 0:
        while True:
            time.sleep(0.05)
    out = x.clone()
    dist.all_reduce(out)
    return out
