"""Gathers the weight as a list of shards and replaces the reduce-scatter by an all-to-all of the gradient chunks
summed in float32 by their owner."""

import torch
import torch.distributed as dist


def solution(x, weight_shard, grad_out):
    world = dist.get_world_size()
    shards = [torch.empty_like(weight_shard) for _ in range(world)]
    dist.all_gather(shards, weight_shard)
    weight = torch.cat(shards).view(grad_out.shape[1], x.shape[1])
    y = torch.matmul(x, weight.t())
    chunks = torch.empty(world * weight_shard.numel(), dtype=x.dtype, device=x.device)
    dist.all_to_all_single(chunks, (grad_out.t() @ x).reshape(-1))
    grad_shard = (chunks.view(world, -1).float().sum(0) / world).to(x.dtype)
    return y, grad_shard
