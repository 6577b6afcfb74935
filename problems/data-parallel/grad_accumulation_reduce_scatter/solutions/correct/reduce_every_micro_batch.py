"""Reduce-scatters each micro-batch's fp32 gradient separately and sums the shards (M times the link bytes)."""

import torch
import torch.distributed as dist


def solution(x, grad_out):
    world = dist.get_world_size()
    acc = None
    for m in range(x.shape[0]):
        g = (grad_out[m].float().t() @ x[m].float()).reshape(-1)
        shard = torch.empty(g.numel() // world, dtype=torch.float32, device=g.device)
        dist.reduce_scatter_tensor(shard, g)
        acc = shard if acc is None else acc + shard
    return acc / world
