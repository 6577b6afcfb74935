"""Wrong: averages the two tensor-parallel partial outputs (as a data-parallel gradient would be) instead of summing."""

import torch
import torch.distributed as dist
import torch.nn.functional as F

_G = {}


def solution(x, w1_shard, w2_shard):
    world, rank = dist.get_world_size(), dist.get_rank()
    if world not in _G:
        dp = [dist.new_group(list(range(t, world, 2))) for t in range(2)]
        tp = [dist.new_group([2 * d, 2 * d + 1]) for d in range(world // 2)]
        _G[world] = (dp, tp)
    dp_groups, tp_groups = _G[world]
    hidden = x.shape[1]
    n = world // 2
    w1 = torch.empty(n * w1_shard.numel(), dtype=x.dtype, device=x.device)
    w2 = torch.empty_like(w1)
    dist.all_gather_into_tensor(w1, w1_shard, group=dp_groups[rank % 2])
    dist.all_gather_into_tensor(w2, w2_shard, group=dp_groups[rank % 2])
    y = F.gelu(x @ w1.view(-1, hidden).t()) @ w2.view(hidden, -1).t()
    dist.all_reduce(y, group=tp_groups[rank // 2])
    return y / 2
