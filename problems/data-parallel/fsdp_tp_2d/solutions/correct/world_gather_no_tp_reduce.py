"""No subgroups: all-gathers every shard over the whole world and computes the full MLP on each rank."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(x, w1_shard, w2_shard):
    world = dist.get_world_size()
    dp, hidden = world // 2, x.shape[1]
    parts1 = torch.empty(world * w1_shard.numel(), dtype=x.dtype, device=x.device)
    parts2 = torch.empty_like(parts1)
    dist.all_gather_into_tensor(parts1, w1_shard)
    dist.all_gather_into_tensor(parts2, w2_shard)
    p1 = parts1.view(dp, 2, -1)  # [d, t, chunk]
    p2 = parts2.view(dp, 2, -1)
    w1 = torch.cat([p1[:, t].reshape(-1, hidden) for t in range(2)])  # [ffn, hidden]
    w2 = torch.cat([p2[:, t].reshape(hidden, -1) for t in range(2)], dim=1)  # [hidden, ffn]
    return (F.gelu(x.float() @ w1.float().t()) @ w2.float().t()).to(x.dtype)
