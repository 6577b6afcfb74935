"""Adds the bias on every rank before the all-reduce, so the output carries it W times."""

import torch.distributed as dist
import torch.nn.functional as F_


def solution(x, weight, bias):
    out = F_.linear(x, weight, bias)
    dist.all_reduce(out)
    return out
