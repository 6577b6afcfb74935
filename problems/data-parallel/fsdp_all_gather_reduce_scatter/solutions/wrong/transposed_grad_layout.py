"""Wrong: computes the weight gradient as x^T @ grad_out, i.e. in [in, out] layout, so the flat shards hold the
gradient of the transposed weight."""

import torch
import torch.distributed as dist


def solution(x, weight_shard, grad_out):
    world = dist.get_world_size()
    flat = torch.empty(weight_shard.numel() * world, dtype=weight_shard.dtype, device=weight_shard.device)
    dist.all_gather_into_tensor(flat, weight_shard)
    y = x @ flat.view(grad_out.shape[1], x.shape[1]).t()
    grad_shard = torch.empty_like(weight_shard)
    dist.reduce_scatter_tensor(grad_shard, (x.t() @ grad_out).reshape(-1))
    return y, grad_shard / world
