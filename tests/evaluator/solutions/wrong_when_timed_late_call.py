# Correct except in the third call of each timed window of four (calls are counted from the load: the warm-up call,
# five trials, one warm-up window of one call, then windows of four): a host that checked only one call per window
# would pass it.
import torch
import torch.distributed as dist

calls = 0


def solution(x: torch.Tensor) -> torch.Tensor:
    global calls
    calls += 1
    out = torch.empty_like(x)
    out.copy_(x)
    dist.all_reduce(out)
    if calls > 7 and (calls - 8) % 4 == 2:
        out += 1.0
    return out
