"""Reduce-scatter the partial products by rows, run the residual add and the norm on this rank's rows only, then
all-gather both outputs: the epilogue's work is split W ways instead of repeated on every rank."""

import torch
import torch.distributed as dist


def solution(x, w, residual, norm_weight):
    world, rank = dist.get_world_size(), dist.get_rank()
    m = x.shape[0]
    rows = m // world
    partial = torch.nn.functional.linear(x, w).float()
    mine = torch.empty((rows, partial.shape[1]), dtype=torch.float32, device=x.device)
    dist.reduce_scatter_tensor(mine, partial)
    res = residual[rank * rows : (rank + 1) * rows].float() + mine
    res_out = res.to(residual.dtype)
    h = res_out.float()
    normed = (h * torch.rsqrt(h.square().mean(dim=-1, keepdim=True) + 1e-5) * norm_weight.float()).to(residual.dtype)
    both = torch.cat([normed, res_out], dim=1).contiguous()
    every = torch.empty((m, both.shape[1]), dtype=both.dtype, device=both.device)
    dist.all_gather_into_tensor(every, both)
    n = residual.shape[1]
    return every[:, :n].contiguous(), every[:, n:].contiguous()
