"""A correct solution measured on a profile whose roofline no run can meet: stands for a result obtained off the
clock (work finished before the timed window, or not timed at all). On CPU no real exploit reaches this check —
the timing protocol catches them first — so the test runs it on a rigged profile to prove the check holds; on GPU
profiles it is an honest solution and is not part of the table."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    out = x.clone()
    dist.all_reduce(out)
    return out
