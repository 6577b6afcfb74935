"""Adds the residual to the partial on every rank before the all-reduce, so the residual is counted W times."""

import torch
import torch.distributed as dist


def solution(partial, residual, weight):
    total = (partial.float() + residual.float()).to(partial.dtype)
    dist.all_reduce(total)
    xf = total.float()
    normed = (xf * torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + 1e-6) * weight.float()).to(partial.dtype)
    return normed, total
