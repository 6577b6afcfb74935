"""Wrong: merges the candidates correctly but reports ids local to the owning shard instead of global ids."""

import torch
import torch.distributed as dist


def solution(logits):
    world = dist.get_world_size()
    values, idx = logits.topk(50, dim=1)
    vs = [torch.empty_like(values) for _ in range(world)]
    ids = [torch.empty_like(idx) for _ in range(world)]
    dist.all_gather(vs, values)
    dist.all_gather(ids, idx)
    top, pos = torch.cat(vs, dim=1).topk(50, dim=1)
    return top, torch.cat(ids, dim=1).gather(1, pos)
