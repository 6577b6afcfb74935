"""Makes a progress bar on its first call, as Inductor does for every compile (a disabled one, even): tqdm then
starts a monitor thread that never ends. That thread is the library's, not the solution's, and must not count as a
thread the call left running."""

import torch
import torch.distributed as dist
from tqdm import tqdm

_ready = False


def solution(x: torch.Tensor) -> torch.Tensor:
    global _ready
    if not _ready:
        for _ in tqdm(range(3), disable=True):
            pass
        _ready = True
    out = x.clone()
    dist.all_reduce(out)
    return out
