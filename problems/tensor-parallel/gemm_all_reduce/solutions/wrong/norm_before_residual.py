"""Normalises the all-reduced product before adding the residual: the epilogue's order matters."""

import torch
import torch.distributed as dist


def solution(x, w, residual, norm_weight):
    partial = torch.nn.functional.linear(x, w)
    dist.all_reduce(partial)
    p = partial.float()
    normed = p * torch.rsqrt(p.square().mean(dim=-1, keepdim=True) + 1e-5) * norm_weight.float()
    return (normed + residual.float()).to(residual.dtype), (residual.float() + p).to(residual.dtype)
