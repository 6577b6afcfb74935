"""Merges the L all-reduces into one by computing every layer's partial from a zero activation: wrong from layer 1 on,
which is what the chain's dependence is there to catch."""

import torch
import torch.distributed as dist


def solution(x, b):
    p = (x.float() * torch.tanh(b.float())[:, None, :]).to(x.dtype)
    dist.all_reduce(p)
    return p
