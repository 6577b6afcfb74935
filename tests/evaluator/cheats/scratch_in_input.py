"""Uses its input as scratch space: reduces into it, copies the result out into a new tensor and returns that (the
copy the contract asks for, and the values are right), leaving the input overwritten. A caller that reads its input
again after the call, as the model around a kernel does, would read the reduced values."""

import torch
import torch.distributed as dist


def solution(x: torch.Tensor) -> torch.Tensor:
    dist.all_reduce(x)
    return x.clone()
