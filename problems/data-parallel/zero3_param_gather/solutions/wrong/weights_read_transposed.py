"""Wrong: reads fc1.weight and fc2.weight from the flat buffer as column-major (transposed) matrices."""

import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(x, *shards):
    world = dist.get_world_size()
    hidden, ffn = x.shape[1], 4 * x.shape[1]
    h = x
    for shard in shards:
        flat = torch.empty(world * shard.numel(), dtype=shard.dtype, device=shard.device)
        dist.all_gather_into_tensor(flat, shard)
        w1, b1, w2, b2 = flat[: 8 * hidden * hidden + 5 * hidden].split([ffn * hidden, ffn, hidden * ffn, hidden])
        h = h + F.linear(F.gelu(F.linear(h, w1.view(hidden, ffn).t(), b1)), w2.view(ffn, hidden).t(), b2)
    return h
